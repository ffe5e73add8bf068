package loadgen

import "os"

// cpuDMALatency is the PM QoS device: while a process holds it open with 0 written, no CPU
// enters an idle state that takes longer than 0 µs to leave, which is what tuned's
// latency-performance profile does on benchmark hosts. On a VM whose idle vCPUs halt, waking
// one cost 5-20 ms spells of steal that froze the generator and both services together (a
// 0.5 ms sleep loop here: ~250 gaps over 1 ms in 5 s, 28 with the device held;
// docs/design/0011-instrument-vouches-for-itself.md). It is opt-in (perf-host --hold-cpus-awake):
// on that VM it also added ~0.75 ms to the p50 of a service that sleeps 3 ms per request (not to
// one that computes), so the host's owner chooses, after an A/A calibration with and without it.
const cpuDMALatency = "/dev/cpu_dma_latency"

// DeviceOpener opens a device for writing; perf-host passes one that raises the capability
// its unprivileged user needs for that one open.
type DeviceOpener func(path string) (*os.File, error)

// OpenForWriting opens a device the process may write to as it is.
func OpenForWriting(path string) (*os.File, error) { return os.OpenFile(path, os.O_WRONLY, 0) }

// WithCPUsHeldAwake has the run hold the PM QoS device, opened with open, while it measures.
func WithCPUsHeldAwake(open DeviceOpener) Option { return func(c *options) { c.openDevice = open } }

// holdCPUsAwake keeps every CPU out of deep idle states until release is called, when asked
// (open is not nil), and says what it did: "not asked", "held", or "not held: " and why. A run
// goes on either way and its result says which, so the verdict can flag a hold that failed.
func holdCPUsAwake(open DeviceOpener) (release func(), state string) {
	if open == nil {
		return func() {}, CPUIdleNotAsked
	}
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

// HostInfo.CPUIdle of a run that held the CPUs awake, and of one not asked to.
const (
	CPUIdleHeld     = "held"
	CPUIdleNotAsked = "not asked"
)
