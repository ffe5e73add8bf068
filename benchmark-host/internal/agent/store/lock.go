package store

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// Lock is the host lock: one run, promotion or gc at a time. It is an flock on root/lock, so
// the kernel releases it when its holder dies, however it dies: a crashed run can never leave
// the host locked. lock.json records the holder for status and for "host busy" messages.
type Lock struct {
	file *os.File
	s    *Store
}

// Holder is who holds the lock.
type Holder struct {
	What  string    `json:"what"`
	Pid   int       `json:"pid"`
	Since time.Time `json:"since"`
}

// ErrBusy is returned when the lock stays held past the wait.
var ErrBusy = errors.New("host busy")

// Acquire takes the lock for `what`, waiting up to wait.
func (s *Store) Acquire(what string, wait time.Duration) (*Lock, error) {
	f, err := os.OpenFile(s.Path("lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock: %w", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, s.busyError()
		}
		time.Sleep(100 * time.Millisecond)
	}
	l := &Lock{file: f, s: s}
	if err := l.setHolder(what, os.Getpid()); err != nil {
		l.Release()
		return nil, err
	}
	return l, nil
}

func (l *Lock) setHolder(what string, pid int) error {
	return WriteJSONAtomic(l.s.Path("lock.json"), Holder{What: what, Pid: pid, Since: time.Now().UTC()})
}

// HandOver passes the lock to a child process that inherits File, recording it as holder.
func (l *Lock) HandOver(what string, pid int) error { return l.setHolder(what, pid) }

// File is the locked file, for a child process to inherit.
func (l *Lock) File() *os.File { return l.file }

// Release frees the lock (closing our descriptor; a child that inherited it keeps it).
func (l *Lock) Release() {
	os.Remove(l.s.Path("lock.json"))
	l.file.Close()
}

// Detach closes our descriptor but leaves the holder record to the child that inherited it.
func (l *Lock) Detach() { l.file.Close() }

func (s *Store) busyError() error {
	if holder, ok := s.CurrentHolder(); ok {
		return fmt.Errorf("%w: %s since %s (%s ago)", ErrBusy, holder.What, holder.Since.Format(time.RFC3339),
			time.Since(holder.Since).Round(time.Second))
	}
	return fmt.Errorf("%w: the lock is held", ErrBusy)
}

// CurrentHolder reports the lock's holder, if the lock is really held. A holder record left by
// a process that died is stale: the flock is free, and the record is ignored.
func (s *Store) CurrentHolder() (Holder, bool) {
	var holder Holder
	f, err := os.OpenFile(s.Path("lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return holder, false
	}
	defer f.Close()
	if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return holder, false
	}
	if ReadJSON(s.Path("lock.json"), &holder) != nil {
		holder.What = "unknown holder"
	}
	return holder, true
}

// InheritedLockFD is where a run hands the lock to its executor (its first ExtraFiles).
const InheritedLockFD = 3

// KeepInheritedLock keeps the lock handed over as descriptor 3 for this process alone.
// Inherited without close-on-exec, it passed to every process the executor started (the
// champion supervisor, the champion, the challenger and whatever they left behind), which kept
// the host locked after the run (docs/design/0017-host-faults.md).
func KeepInheritedLock() { syscall.CloseOnExec(InheritedLockFD) }
