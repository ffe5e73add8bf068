package loadgen

import "os"

// cpuDMALatency is the PM QoS device: while a process holds it open with 0 written, no CPU
// enters an idle state that takes longer than 0 µs to leave, which is what tuned's
// latency-performance profile does on benchmark hosts. On a VM whose idle vCPUs halt, waking
// one cost 5-20 ms spells of steal that froze the generator and both services together (a
// 0.5 ms sleep loop here: ~250 gaps over 1 ms in 5 s, 28 with the device held; issue 12).
const cpuDMALatency = "/dev/cpu_dma_latency"

// DeviceOpener opens a device for writing; perf-host passes one that raises the capability
// its unprivileged user needs for that one open.
type DeviceOpener func(path string) (*os.File, error)

func openForWriting(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }

// WithDeviceOpener has the run open the PM QoS device with open.
func WithDeviceOpener(open DeviceOpener) Option { return func(c *options) { c.openDevice = open } }

// holdCPUsAwake keeps every CPU out of deep idle states until release is called, and says
// whether it could ("held", or "not held: " and why); a run goes on either way and its result
// says which, so the verdict can flag a measurement taken with the CPUs free to sleep.
func holdCPUsAwake(open DeviceOpener) (release func(), state string) {
	f, err := open(cpuDMALatency)
	if err != nil {
		return func() {}, "not held: " + err.Error()
	}
	var zero [4]byte // an int32 latency bound of 0 µs
	if _, err := f.Write(zero[:]); err != nil {
		f.Close()
		return func() {}, "not held: " + err.Error()
	}
	return func() { f.Close() }, CPUIdleHeld
}

// CPUIdleHeld is HostInfo.CPUIdle of a run that held the CPUs awake.
const CPUIdleHeld = "held"
