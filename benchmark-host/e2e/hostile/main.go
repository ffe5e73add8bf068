// Command hostile is what a hostile pull request would run beside its service on the benchmark
// host, for the isolation tests (e2e/isolation_test.go, crossarm_test.go, shared_test.go). Each
// mode is one attack; every outcome is printed on stdout (the challenger's log), and what it
// manages to read is printed whole, so that a test can look for it.
//
//	hostile linger                 start a process in a new session that ignores SIGTERM and stays
//	hostile signal                 SIGSTOP/SIGCONT bursts at every other "./service" process
//	hostile snoop PATH…            read, list, write and execute what it should not reach
//	hostile bomb                   fork copies of itself until the kernel refuses, and keep trying
//	hostile burn                   spin as many threads as GOMAXPROCS
//	hostile squat PORT             take the champion's port before the champion does, and serve it
//	                               slowly (a run's two arms start together)
//	hostile knock PORT             send requests to PORT (the champion's) whenever its own service
//	                               is quiet, that is while the generator measures the champion
//	hostile flood PORT N           hold N idle connections to PORT, with bursts of half-requests
//	hostile fill DIR [MIB]         write DIR (made if missing) full, or MIB MiB into it, and exit
//	hostile plant                  leave a secret where a careless service leaves things: a file
//	                               in /tmp and in /dev/shm, a SysV shared memory segment, an
//	                               abstract unix socket; and keep them
//	hostile peek                   look for what plant left in those places and in /proc,
//	                               and leave a file of its own in /tmp and /dev/shm
//	hostile sysv MIB               leave MIB MiB of SysV shared memory behind, and exit
//	hostile pin CPU CORES          move a thread onto CPU (the load generator's) and burn CORES of
//	                               it whenever its own service is quiet (the other arm measured)
//	hostile swarm N MIB            start N processes of MIB MiB each, every one smaller than
//	                               the champion, and keep them
//	hostile spin CORES             burn CORES of a CPU in a background thread (a legitimate
//	                               change that costs CPU, not latency)
//	hostile beside PROG -- MODE ARGS [-- MODE ARGS…]
//	                               start each attack in the background, then execute PROG (a
//	                               container image has no shell to do it)
package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: hostile linger|signal|snoop PATH…|bomb|burn")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "linger":
		linger()
	case "lingering":
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
		for {
			time.Sleep(time.Hour)
		}
	case "signal":
		signalOthers()
	case "snoop":
		snoop(os.Args[2:])
	case "bomb":
		bomb()
	case "sleeper":
		time.Sleep(time.Hour)
	case "squat":
		squat(os.Args[2])
	case "knock":
		knock(os.Args[2])
	case "flood":
		n, _ := strconv.Atoi(os.Args[3])
		flood(os.Args[2], n)
	case "swarm":
		n, _ := strconv.Atoi(os.Args[2])
		mib, _ := strconv.Atoi(os.Args[3])
		swarm(n, mib)
	case "hold":
		mib, _ := strconv.Atoi(os.Args[2])
		hold(mib)
	case "spin":
		cores, _ := strconv.ParseFloat(os.Args[2], 64)
		spin(cores)
	case "burn":
		for range runtime.GOMAXPROCS(0) {
			go func() {
				//lint:ignore SA5002 spinning is the point: a challenger that takes every CPU it can
				for {
				}
			}()
		}
		select {}
	default:
		sharedAttack(os.Args[1], os.Args[2:])
	}
}

// linger leaves a process behind in a session of its own, which today's process-group stop
// does not reach; it also tries to leave its cgroup for the parent's.
func linger() {
	cmd := exec.Command(os.Args[0], "lingering")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Println("linger: start:", err)
		return
	}
	fmt.Printf("linger: pid %d in a new session\n", cmd.Process.Pid)
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rel, ok := strings.CutPrefix(line, "0::"); ok && rel != "/" {
				for _, mount := range []string{"/sys/fs/cgroup", "/sys/fs/cgroup/unified"} {
					parent := mount + rel[:strings.LastIndex(rel, "/")]
					err := os.WriteFile(parent+"/cgroup.procs", []byte(strconv.Itoa(cmd.Process.Pid)), 0)
					fmt.Printf("linger: escape to %s: %v\n", parent, err)
					err = os.WriteFile(mount+"/cgroup.procs", []byte(strconv.Itoa(cmd.Process.Pid)), 0)
					fmt.Printf("linger: escape to %s: %v\n", mount, err)
				}
			}
		}
	}
}

// signalOthers stops every "./service" process other than its own arm's, in bursts, which
// today made the same binary read 31 ms faster at p90 as the challenger.
func signalOthers() {
	own := syscall.Getpgrp()
	var ok, denied int
	for round := 0; ; round++ {
		entries, _ := os.ReadDir("/proc")
		var targets []int
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if pgid, _ := syscall.Getpgid(pid); strings.HasPrefix(string(cmd), "./service") && pgid != own {
				targets = append(targets, pid)
			}
		}
		for _, pid := range targets {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				denied++
			} else {
				ok++
			}
		}
		time.Sleep(20 * time.Millisecond)
		for _, pid := range targets {
			syscall.Kill(pid, syscall.SIGCONT)
		}
		if round%50 == 0 {
			fmt.Printf("signal: %d targets, %d stops delivered, %d refused\n", len(targets), ok, denied)
		}
		time.Sleep(30 * time.Millisecond)
	}
}

// snoop tries to read, list, write and run the paths it is given; whatever it can read, it
// prints.
func snoop(paths []string) {
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			entries, err := os.ReadDir(p)
			fmt.Printf("snoop: list %s: %d entries, %v\n", p, len(entries), err)
			for _, e := range entries {
				fmt.Printf("snoop: LISTED %s/%s\n", p, e.Name())
			}
			continue
		}
		b, err := os.ReadFile(p)
		fmt.Printf("snoop: read %s: %v\n", p, err)
		if err == nil {
			fmt.Printf("snoop: READ %s: %q\n", p, b[:min(len(b), 200)])
		}
		if strings.HasSuffix(p, "perf-host") {
			out, err := exec.Command(p, "status").CombinedOutput()
			fmt.Printf("snoop: exec %s: %v %q\n", p, err, out[:min(len(out), 200)])
		}
		f, err := os.OpenFile(p+".planted", os.O_WRONLY|os.O_CREATE, 0o644)
		fmt.Printf("snoop: write %s.planted: %v\n", p, err)
		if err == nil {
			f.Close()
		}
	}
	// ptrace the other arm's service, as a debugger would.
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.HasPrefix(string(cmd), "./service") {
			continue
		}
		if pgid, _ := syscall.Getpgid(pid); pgid == syscall.Getpgrp() {
			continue
		}
		runtime.LockOSThread()
		err = syscall.PtraceAttach(pid)
		fmt.Printf("snoop: ptrace %d: %v\n", pid, err)
		if err == nil {
			syscall.PtraceDetach(pid)
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		fmt.Printf("snoop: environ of %d: %v %q\n", pid, err, env[:min(len(env), 100)])
	}
}

// bomb forks copies of itself, each asleep, until fork fails, and keeps pressing (every 50 ms,
// as a shell's fork retries do).
func bomb() {
	started, refused := 0, 0
	for i := 0; ; i++ {
		cmd := exec.Command(os.Args[0], "sleeper")
		if err := cmd.Start(); err != nil {
			refused++
			if refused == 1 {
				fmt.Printf("bomb: fork refused after %d processes: %v\n", started, err)
			}
			time.Sleep(50 * time.Millisecond)
			continue
		}
		started++
	}
}

// squat binds 127.0.0.1:port as soon as it is free and answers every request 200, 20 ms late:
// a champion that cannot bind its port, but stays up, would then be measured through it.
func squat(port string) {
	for i := 0; ; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err == nil {
			fmt.Printf("squat: serving :%s\n", port)
			http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				time.Sleep(20 * time.Millisecond)
				w.Write([]byte("fast v1\n"))
			}))
		}
		if i%1000 == 0 {
			fmt.Printf("squat: :%s: %v\n", port, err)
		}
		time.Sleep(time.Millisecond)
	}
}

// ownService is the pid of this arm's "./service" (same user, another process), once it runs.
func ownService() int {
	for {
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			cmd, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			var st syscall.Stat_t
			if err == nil && strings.HasPrefix(string(cmd), "./service") && syscall.Stat("/proc/"+e.Name(), &st) == nil && int(st.Uid) == os.Getuid() {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// cpuTicks is a process's user+system time in clock ticks.
func cpuTicks(pid int) int64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return u + s
}

// knock sends requests to port whenever its own service used no CPU for the last 20 ms: the
// generator is measuring the other arm then, and every request it answers makes it slower.
func knock(port string) {
	own := ownService()
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	url := "http://127.0.0.1:" + port + "/work?key=7"
	var answered, failed int
	var lastErr error
	last := cpuTicks(own)
	for round := 0; ; round++ {
		time.Sleep(20 * time.Millisecond)
		now := cpuTicks(own)
		quiet := now == last
		last = now
		if quiet {
			for range 4 {
				resp, err := client.Get(url)
				if err != nil {
					failed++
					lastErr = err
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered++
			}
		}
		if round%50 == 0 {
			fmt.Printf("knock: :%s answered %d requests, %d failed (%v)\n", port, answered, failed, lastErr)
		}
	}
}

// flood holds n idle connections to port open, and writes half a request on a few of them
// every 100 ms, which keeps the server reading.
func flood(port string, n int) {
	var conns []net.Conn
	var refused int
	var lastErr error
	for round := 0; ; round++ {
		for len(conns) < n {
			c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
			if err != nil {
				refused++
				lastErr = err
				break
			}
			conns = append(conns, c)
		}
		for i := round % 4; i < len(conns); i += 4 {
			conns[i].Write([]byte("GET /work?key=1 HTTP/1.1\r\nHost: x\r\n"))
		}
		if round%20 == 0 {
			fmt.Printf("flood: :%s %d connections open, %d refused (%v)\n", port, len(conns), refused, lastErr)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// swarm starts n processes that each hold mib MiB, and keeps them.
func swarm(n, mib int) {
	started := 0
	for range n {
		if err := exec.Command(os.Args[0], "hold", strconv.Itoa(mib)).Start(); err != nil {
			fmt.Printf("swarm: start: %v\n", err)
			continue
		}
		started++
	}
	fmt.Printf("swarm: %d processes of %d MiB each\n", started, mib)
	select {}
}

// hold allocates mib MiB, touches every page and keeps them.
func hold(mib int) {
	b := make([]byte, mib<<20)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 1
	}
	for {
		time.Sleep(time.Hour)
		b[0]++
	}
}

// spin burns cores of one CPU: busy for cores of every 10 ms, asleep for the rest.
func spin(cores float64) {
	busy := time.Duration(cores * float64(10*time.Millisecond))
	for {
		start := time.Now()
		for time.Since(start) < busy {
		}
		time.Sleep(10*time.Millisecond - busy)
	}
}
