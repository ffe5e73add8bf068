package placement

import (
	"os/exec"
	"runtime"
	"testing"
)

func TestParseAndFormatCPULists(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"", ""}, {"0", "0"}, {"0-3", "0-3"}, {"3,1,2,0", "0-3"}, {"0-1,8-9", "0-1,8-9"},
		{"2-6,10-14", "2-6,10-14"}, {" 0 , 2 ", "0,2"}, {"1-1", "1"},
	} {
		got, err := Parse(c.in)
		if err != nil || got.String() != c.out {
			t.Errorf("Parse(%q) = %q, %v; want %q", c.in, got, err, c.out)
		}
	}
	for _, bad := range []string{"a", "3-1", "-1", "0-", "1,,2", "5000"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	a, _ := Parse("0-1")
	b, _ := Parse("1-3")
	c, _ := Parse("2-3")
	if !a.Overlaps(b) || a.Overlaps(c) {
		t.Errorf("Overlaps wrong")
	}
	if err := c.Within(a); err == nil {
		t.Errorf("Within accepted CPUs outside the set")
	}
}

// A process started from a pinned thread runs on the thread's CPUs; the rest of the process
// keeps its own.
func TestAProcessStartedFromAPinnedThreadInheritsItsCPUs(t *testing.T) {
	online, err := Online()
	if err != nil || len(online) < 2 {
		t.Skip("needs two online CPUs")
	}
	want := online[len(online)-1:]
	done := make(chan error)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		before, _ := ThreadAffinity()
		defer PinThread(before)
		if err := PinThread(want); err != nil {
			done <- err
			return
		}
		cmd := exec.Command("sleep", "5")
		if err := cmd.Start(); err != nil {
			done <- err
			return
		}
		defer cmd.Process.Kill()
		got, err := ProcessAffinity(cmd.Process.Pid)
		if err == nil && got.String() != want.String() {
			t.Errorf("child runs on %s, want %s", got, want)
		}
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
