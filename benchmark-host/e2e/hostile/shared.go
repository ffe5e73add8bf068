package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// sharedAttack runs the attacks on what every user of a host shares (e2e/shared_test.go).
func sharedAttack(mode string, args []string) {
	switch mode {
	case "fill":
		mib := -1
		if len(args) > 1 {
			mib, _ = strconv.Atoi(args[1])
		}
		fill(args[0], mib)
	case "plant":
		plant()
	case "peek":
		peek()
	case "sysv":
		mib, _ := strconv.Atoi(args[0])
		sysv(mib)
	case "pin":
		cpu, _ := strconv.Atoi(args[0])
		cores, _ := strconv.ParseFloat(args[1], 64)
		pin(cpu, cores)
	case "beside":
		beside(args[0], args[1:])
	default:
		fmt.Fprintln(os.Stderr, "hostile: no such attack:", mode)
		os.Exit(2)
	}
}

// fill writes dir full (or limit MiB into it, when limit >= 0), 1 MiB at a time, and says how
// far it got.
func fill(dir string, limit int) {
	// Said first: the host may stop it the moment the disk is full, before it can say more.
	fmt.Printf("fill: filling %s\n", dir)
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	written := 0
	err := os.MkdirAll(dir, 0o700)
	for i := 0; err == nil && written != limit; i++ {
		var f *os.File
		if f, err = os.Create(fmt.Sprintf("%s/fill-%d", dir, i)); err != nil {
			break
		}
		for range 64 {
			if written == limit {
				break
			}
			if _, err = f.Write(chunk); err != nil {
				break
			}
			written++
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err == nil {
		err = fmt.Errorf("stopped at the %d MiB asked for", limit)
	}
	fmt.Printf("fill: wrote %d MiB into %s: %v\n", written, dir, err)
}

// Where plant leaves its secret: names (a file's, an abstract socket's) ending in its uid, and
// a SysV key of plantKey plus its uid.
const (
	plantName = "hostile-plant-"
	plantKey  = 0x5ec00000
	secret    = "the-champion's-secret"
)

// plant leaves a secret, readable by anyone, in each place the host's users share: what a
// careless service does with its temporary files, its shared memory and its sockets.
func plant() {
	name := plantName + strconv.Itoa(os.Getuid())
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		err := os.WriteFile(dir+"/"+name, []byte(secret), 0o644)
		fmt.Printf("plant: %s/%s: %v\n", dir, name, err)
	}
	id, err := unix.SysvShmGet(plantKey+os.Getuid(), 4096, 0o644|unix.IPC_CREAT)
	if err == nil {
		var mem []byte
		if mem, err = unix.SysvShmAttach(id, 0, 0); err == nil {
			copy(mem, secret)
		}
	}
	fmt.Printf("plant: SysV shared memory key %#x: %v\n", plantKey+os.Getuid(), err)
	l, err := net.Listen("unix", "@"+name)
	fmt.Printf("plant: abstract socket @%s: %v\n", name, err)
	if err == nil {
		for {
			c, err := l.Accept()
			if err == nil {
				c.Write([]byte(secret))
				c.Close()
			}
		}
	}
	for {
		time.Sleep(time.Hour) // a static build has no other goroutine: select {} would deadlock
	}
}

// peek looks for what plant left where users share (it plants nothing itself), and reads what
// it finds: READ marks each secret it got. It also leaves files of its own there, for the other
// arm to find.
func peek() {
	time.Sleep(time.Second) // both arms start together: the other's plant first
	for _, dir := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		peekDir(dir)
	}
	peekSysV()
	peekSockets()
	peekProc()
	for {
		time.Sleep(time.Hour) // a static build has no other goroutine: select {} would deadlock
	}
}

// peekDir reads what plant left in dir, and leaves a file there.
func peekDir(dir string) {
	entries, err := os.ReadDir(dir)
	var planted []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), plantName) {
			planted = append(planted, e.Name())
		}
	}
	fmt.Printf("peek: %s: %d entries, %d planted (%v)\n", dir, len(entries), len(planted), err)
	for _, n := range planted {
		if b, err := os.ReadFile(dir + "/" + n); err == nil {
			fmt.Printf("peek: READ %s/%s: %q\n", dir, n, b)
		} else {
			fmt.Printf("peek: %s/%s: %v\n", dir, n, err)
		}
	}
	err = os.WriteFile(fmt.Sprintf("%s/hostile-left-by-%d", dir, os.Getuid()), []byte("left"), 0o644)
	fmt.Printf("peek: left a file in %s: %v\n", dir, err)
}

// peekSysV reads plant's SysV segments: /proc/sysvipc/shm lists the segments of this IPC
// namespace, whoever owns them.
func peekSysV() {
	b, _ := os.ReadFile("/proc/sysvipc/shm")
	segments := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		key, _ := strconv.ParseInt(f[0], 10, 64)
		if key&^0xffff != plantKey {
			continue
		}
		segments++
		id, _ := strconv.Atoi(f[1])
		mem, err := unix.SysvShmAttach(id, 0, unix.SHM_RDONLY)
		if err != nil {
			fmt.Printf("peek: SysV segment %#x: %v\n", key, err)
			continue
		}
		fmt.Printf("peek: READ SysV segment %#x: %q\n", key, mem[:len(secret)])
	}
	fmt.Printf("peek: %d SysV segments planted in this IPC namespace\n", segments)
}

// peekSockets reads plant's abstract unix sockets: /proc/net/unix names them, whoever bound them.
func peekSockets() {
	b, _ := os.ReadFile("/proc/net/unix")
	sockets := 0
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 || !strings.HasPrefix(f[7], "@"+plantName) {
			continue
		}
		sockets++
		c, err := net.Dial("unix", f[7])
		if err != nil {
			fmt.Printf("peek: abstract socket %s: %v\n", f[7], err)
			continue
		}
		got, _ := io.ReadAll(c)
		c.Close()
		fmt.Printf("peek: READ abstract socket %s: %q\n", f[7], got)
	}
	fmt.Printf("peek: %d abstract sockets planted\n", sockets)
}

// peekProc says what /proc shows of another user's plant process (its environment needs ptrace
// access).
func peekProc() {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var st syscall.Stat_t
		if _, err := strconv.Atoi(e.Name()); err != nil || syscall.Stat("/proc/"+e.Name(), &st) != nil || int(st.Uid) == os.Getuid() {
			continue
		}
		if cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline"); strings.Contains(string(cmd), "hostile\x00plant") {
			_, envErr := os.ReadFile("/proc/" + e.Name() + "/environ")
			stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			fmt.Printf("peek: /proc/%s of uid %d: cmdline %q, stat readable %v, environ %v\n", e.Name(), st.Uid, cmd, len(stat) > 0, envErr)
		}
	}
}

// sysv leaves mib MiB of SysV shared memory, touched, and exits: the segments outlive it
// unless its IPC namespace dies with it.
func sysv(mib int) {
	for i := range mib {
		id, err := unix.SysvShmGet(unix.IPC_PRIVATE, 1<<20, 0o600|unix.IPC_CREAT)
		if err == nil {
			var mem []byte
			if mem, err = unix.SysvShmAttach(id, 0, 0); err == nil {
				for j := 0; j < len(mem); j += 4096 {
					mem[j] = 1
				}
			}
		}
		if err != nil {
			fmt.Printf("sysv: left %d MiB of shared memory: %v\n", i, err)
			return
		}
	}
	fmt.Printf("sysv: left %d MiB of shared memory\n", mib)
}

// pin moves one thread onto cpu and, whenever its own service used no CPU for the last 20 ms
// (the generator is measuring the other arm), burns cores of it there: on the load generator's
// CPU, that delays the other arm's requests alone.
func pin(cpu int, cores float64) {
	runtime.LockOSThread()
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		fmt.Printf("pin: onto CPU %d: %v\n", cpu, err)
		return
	}
	fmt.Printf("pin: onto CPU %d: ok\n", cpu)
	own := ownService()
	busy := time.Duration(cores * float64(20*time.Millisecond))
	last, bursts := cpuTicks(own), 0
	for round := 0; ; round++ {
		time.Sleep(20*time.Millisecond - busy)
		now := cpuTicks(own)
		if now == last {
			for start := time.Now(); time.Since(start) < busy; {
			}
			bursts++
		}
		last = now
		if round%100 == 0 {
			fmt.Printf("pin: %d bursts on CPU %d\n", bursts, cpu)
		}
	}
}

// beside starts each attack in args ("-- MODE ARGS…", repeated) as a process of its own and
// executes prog in its place.
func beside(prog string, args []string) {
	var attack []string
	for _, a := range append(args, "--") {
		if a != "--" {
			attack = append(attack, a)
			continue
		}
		if len(attack) > 0 {
			cmd := exec.Command(os.Args[0], attack...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			if err := cmd.Start(); err != nil {
				fmt.Printf("beside: %v: %v\n", attack, err)
			}
		}
		attack = nil
	}
	err := syscall.Exec(prog, []string{prog}, os.Environ())
	fmt.Printf("beside: exec %s: %v\n", prog, err)
	os.Exit(1)
}
