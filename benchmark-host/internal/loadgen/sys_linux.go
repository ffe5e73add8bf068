package loadgen

import (
	"encoding/binary"
	"errors"
	"fmt"
	"syscall"
	"time"
	"unsafe"
)

// sysEpollPwait2 is epoll_pwait2 (Linux 5.11+): epoll_wait with a nanosecond timeout, the one
// number on every architecture.
const sysEpollPwait2 = 441

const (
	epollIn    = syscall.EPOLLIN
	epollOut   = syscall.EPOLLOUT
	epollErr   = syscall.EPOLLERR
	epollHup   = syscall.EPOLLHUP
	epollRdHup = syscall.EPOLLRDHUP
	epollET    = -syscall.EPOLLET & 0xffffffff // EPOLLET is 1<<31, negative as an int32
)

// rawWaitMax is the longest wait made as a raw syscall. A raw syscall keeps the thread's P,
// so the scheduler does not retake it and hand it back around every request; but a P that
// sleeps holds up a GC stop-the-world, so longer waits (low rates) go through the scheduler.
const rawWaitMax = 2 * time.Millisecond

// epollWait waits for events for at most d (forever when d < 0); EINTR is a return with no
// events, since the caller recomputes its deadline anyway.
func epollWait(ep int, events []syscall.EpollEvent, d time.Duration) (int, error) {
	var tsp unsafe.Pointer
	var ts syscall.Timespec
	if d >= 0 {
		ts = syscall.NsecToTimespec(int64(d))
		tsp = unsafe.Pointer(&ts)
	}
	wait := syscall.Syscall6
	if d >= 0 && d <= rawWaitMax {
		wait = syscall.RawSyscall6
	}
	n, _, errno := wait(sysEpollPwait2, uintptr(ep), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)),
		uintptr(tsp), 0, 0)
	if errno == syscall.EINTR {
		return 0, nil
	}
	if errno != 0 {
		return 0, errno
	}
	return int(n), nil
}

// probeEpollPwait2 refuses kernels without epoll_pwait2 with a clear message.
func probeEpollPwait2(ep int) error {
	var ev [1]syscall.EpollEvent
	if _, err := epollWait(ep, ev[:], 0); err != nil {
		if errors.Is(err, syscall.ENOSYS) {
			return errors.New("the load generator needs Linux 5.11 or later (epoll_pwait2)")
		}
		return fmt.Errorf("epoll_pwait2: %w", err)
	}
	return nil
}

// newEventfd returns a non-blocking eventfd, used to wake a loop from another goroutine.
func newEventfd() (int, error) {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		return -1, fmt.Errorf("eventfd: %w", errno)
	}
	return int(fd), nil
}

func signalEventfd(fd int) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], 1)
	syscall.Write(fd, b[:])
}

func drainEventfd(fd int) {
	var b [8]byte
	syscall.Read(fd, b[:])
}

// dialNonblocking starts a TCP connection; the result is known when the socket turns
// writable (see socketError).
func dialNonblocking(e *endpoint) (int, error) {
	fd, err := syscall.Socket(e.family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	// Requests are written whole; Nagle would hold back a second segment of a large one.
	syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, soTimestampNS, 1)
	if err := syscall.Connect(fd, e.sockaddr); err != nil && err != syscall.EINPROGRESS {
		syscall.Close(fd)
		return -1, err
	}
	return fd, nil
}

func socketError(fd int) error {
	v, err := syscall.GetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
	if err != nil {
		return err
	}
	if v != 0 {
		return syscall.Errno(v)
	}
	return nil
}

// processCPU is the CPU time every thread of this process has used (user + system).
func processCPU() time.Duration {
	var ts syscall.Timespec
	syscall.RawSyscall(syscall.SYS_CLOCK_GETTIME, clockProcessCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return time.Duration(ts.Nano())
}

const clockProcessCPUTimeID = 2

// soTimestampNS asks the kernel to stamp every received segment with its arrival time
// (CLOCK_REALTIME), returned with each recvmsg.
const soTimestampNS = 35

// recvStamped reads into p and returns the kernel's arrival time of the last segment read
// (ns of CLOCK_REALTIME; 0 when absent). oob is the caller's control buffer.
func recvStamped(fd int, p, oob []byte) (n int, arrival int64, err error) {
	iov := syscall.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	msg := syscall.Msghdr{Iov: &iov, Iovlen: 1, Control: &oob[0]}
	msg.SetControllen(len(oob))
	r, _, errno := syscall.RawSyscall(syscall.SYS_RECVMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), syscall.MSG_DONTWAIT)
	if errno != 0 {
		return 0, 0, errno
	}
	// One control message is expected: SOL_SOCKET / SCM_TIMESTAMPNS with a timespec.
	const hdr = syscall.SizeofCmsghdr
	if int(msg.Controllen) >= hdr+16 {
		h := (*syscall.Cmsghdr)(unsafe.Pointer(&oob[0]))
		if h.Level == syscall.SOL_SOCKET && h.Type == soTimestampNS {
			sec := int64(binary.NativeEndian.Uint64(oob[hdr:]))
			nsec := int64(binary.NativeEndian.Uint64(oob[hdr+8:]))
			arrival = sec*1e9 + nsec
		}
	}
	return int(r), arrival, nil
}

// sendNonblocking writes to a non-blocking socket. Like every call a lane makes on its
// sockets it is a raw syscall: it cannot block, so telling the scheduler about it (and
// letting sysmon take the P meanwhile) is pure cost.
func sendNonblocking(fd int, p []byte) (int, error) {
	r, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
