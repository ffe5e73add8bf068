package loadgen

import (
	"encoding/binary"
	"fmt"
	"os"
	"syscall"
)

const (
	efdSemaphore = 0x1
	efdNonblock  = syscall.O_NONBLOCK
	efdCloexec   = syscall.O_CLOEXEC
)

// jobQueue hands jobs from the dispatcher to one arm's workers without readying a goroutine
// on the dispatcher's P. Workers never park on the channel; they park on an eventfd in the
// network poller, and the thread blocked in epoll_wait runs the woken worker directly. A
// plain channel hand-off put the worker in the dispatcher P's runnext slot, where stealing it
// took a second thread wake and a back-off: ~90 µs of dispatch lag per request.
type jobQueue struct {
	jobs  chan job
	ready *os.File // semaphore eventfd: one count per queued job, plus one stop token per worker
	fd    int
}

func newJobQueue(depth int) (*jobQueue, error) {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_EVENTFD2, 0, efdSemaphore|efdNonblock|efdCloexec, 0)
	if errno != 0 {
		return nil, fmt.Errorf("eventfd: %w", errno)
	}
	return &jobQueue{jobs: make(chan job, depth), ready: os.NewFile(fd, "jobqueue"), fd: int(fd)}, nil
}

// push queues a job; false when the queue is full.
func (q *jobQueue) push(j job) bool {
	select {
	case q.jobs <- j:
		q.signal(1)
		return true
	default:
		return false
	}
}

func (q *jobQueue) signal(n uint64) {
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], n)
	syscall.Write(q.fd, b[:])
}

// pop blocks until a job is queued; false once the queue is closed and drained.
func (q *jobQueue) pop() (job, bool) {
	var b [8]byte
	if _, err := q.ready.Read(b[:]); err != nil {
		return job{}, false
	}
	j, ok := <-q.jobs
	return j, ok
}

// close lets each of n workers drain what is queued and then return.
func (q *jobQueue) close(workers int) {
	close(q.jobs)
	q.signal(uint64(workers))
}

// release frees the eventfd once every worker has returned.
func (q *jobQueue) release() { q.ready.Close() }
