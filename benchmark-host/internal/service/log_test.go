package service

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A service writing 50 MB of output keeps at most the cap on disk: its first half, a line
// saying how much was cut, and its last half.
func TestACappedLogKeepsItsStartAndEndAndSaysTheCut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arm.log")
	l := Log{Path: path, MaxBytes: 1 << 20}
	out, err := l.Open("--- perf-host: starting test\n")
	if err != nil {
		t.Fatal(err)
	}
	// 50 MB of numbered lines: the first and last are known.
	cmd := exec.Command("sh", "-c", `echo first-line; seq 1 6000000; echo last-line`)
	cmd.Stdout, cmd.Stderr = out.W, out.W
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.W.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	out.Wait(10 * time.Second)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	written := int64(len("first-line\nlast-line\n"))
	for i := 1; i <= 6000000; i++ {
		written += int64(len(strconv.Itoa(i)) + 1)
	}
	if int64(len(b)) > l.MaxBytes+512 {
		t.Fatalf("kept %d bytes, over the cap %d", len(b), l.MaxBytes)
	}
	text := string(b)
	if !strings.HasPrefix(text, "--- perf-host: starting test\nfirst-line\n1\n2\n") || !strings.HasSuffix(text, "5999999\n6000000\nlast-line\n") {
		t.Fatalf("the start or end is not kept: %q … %q", text[:60], text[len(text)-60:])
	}
	cut := l.Cut()
	if kept := int64(len(b)); cut+kept < written || cut < written-2*l.MaxBytes {
		t.Fatalf("cut %d of %d written, %d kept", cut, written, kept)
	}
	if !strings.Contains(text, "bytes of this log cut here") {
		t.Fatal("the log does not say it was cut")
	}
	if tail := LogTail(path, 2); tail != "6000000\nlast-line" {
		t.Fatalf("LogTail %q", tail)
	}
	if rest, _ := filepath.Glob(path + ".tail*"); len(rest) > 0 {
		t.Fatalf("tail files left: %v", rest)
	}
	t.Logf("written %d bytes, kept %d, cut %d", written, len(b), cut)
}

// A log under its cap is kept whole, with no cut line.
func TestALogUnderItsCapIsKeptWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arm.log")
	l := Log{Path: path, MaxBytes: 1 << 20}
	out, err := l.Open("header\n")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", "echo hello; echo bye >&2")
	cmd.Stdout, cmd.Stderr = out.W, out.W
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	out.W.Close()
	out.Wait(5 * time.Second)
	if b, _ := os.ReadFile(path); string(b) != "header\nhello\nbye\n" || l.Cut() != 0 {
		t.Fatalf("log %q, cut %d", b, l.Cut())
	}
}
