package privilege

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// joinV1 moves the calling thread into each cgroup v1 group dir and returns how to move it
// back into the groups it was in (a v1 hierarchy keeps each thread in one group of its own).
// What the thread starts meanwhile is born in dirs; what it does after is perf-host's again.
func joinV1(dirs []string) (back func() error, err error) {
	tid := []byte(strconv.Itoa(syscall.Gettid()))
	var origins []string
	back = func() error {
		var errs []error
		for _, tasks := range origins {
			if err := os.WriteFile(tasks, tid, 0); err != nil {
				errs = append(errs, fmt.Errorf("back to cgroup %s: %w", filepath.Dir(tasks), err))
			}
		}
		return errors.Join(errs...)
	}
	for _, dir := range dirs {
		origin, err := v1Origin(dir)
		if err != nil {
			return back, err
		}
		if err := os.WriteFile(filepath.Join(dir, "tasks"), tid, 0); err != nil {
			return back, fmt.Errorf("joining cgroup %s: %w", dir, err)
		}
		origins = append(origins, origin)
	}
	return back, nil
}

// v1Origin is the tasks file of the group the calling thread is in, in the v1 hierarchy dir
// lies in: the hierarchy mounted nearest above dir, and the thread's line in
// /proc/thread-self/cgroup that names its controllers.
func v1Origin(dir string) (string, error) {
	mounts, err := os.Open("/proc/self/mounts")
	if err != nil {
		return "", err
	}
	defer mounts.Close()
	var mount string
	var options []string
	s := bufio.NewScanner(mounts)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) >= 4 && f[2] == "cgroup" && strings.HasPrefix(dir, f[1]+"/") && len(f[1]) > len(mount) {
			mount, options = f[1], strings.Split(f[3], ",")
		}
	}
	if mount == "" {
		return "", fmt.Errorf("%s is in no cgroup v1 hierarchy", dir)
	}
	own, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(own), "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) == 3 && f[1] != "" && !slices.ContainsFunc(strings.Split(f[1], ","), func(c string) bool { return !slices.Contains(options, c) }) {
			return filepath.Join(mount, f[2], "tasks"), nil
		}
	}
	return "", fmt.Errorf("this thread's group in the hierarchy of %s is not in /proc/thread-self/cgroup", mount)
}
