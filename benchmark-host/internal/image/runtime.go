package image

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Run is one process of an image, as an arm runs it.
type Run struct {
	RootFS   string   // the arm's unpacked root filesystem (absolute)
	Argv     []string // from service.command or setup; empty: the image's entrypoint and cmd
	Env      []string // the host's variables and service.env, which win over the image's Env
	StateDir string   // bound at the same path inside, so $STATE_DIR means the same
	UID, GID uint32   // the arm's user, which the container's uid 0 maps to
}

// defaultPath is the PATH an image without one gets, as Docker gives it.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Spec is the runc configuration (config.json) of one run: the container's uid 0 is the arm's
// user, through a user namespace that maps nothing else, with no capabilities and no new
// privileges; it shares the host's network (the arm's ports, as a tarball build serves them)
// and has its own mount, pid, ipc and uts namespaces, so that nothing of it outlives its
// first process and no mount is left on the host. It has no cgroup of its own: runc runs in
// the arm's cgroup and on its CPUs, and the container stays there.
func (c *Config) Spec(r Run) ([]byte, error) {
	argv := r.Argv
	if len(argv) == 0 {
		argv = c.Argv()
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("service.command: the image %s has no entrypoint or cmd; set service.command to the program to run in it, such as [\"/app/server\"]", c.Digest)
	}
	env := mergeEnv(c.Env, r.Env)
	cwd := c.WorkingDir
	if cwd == "" {
		cwd = "/"
	}
	bind := func(src, dst string, opts ...string) map[string]any {
		return map[string]any{"destination": dst, "type": "none", "source": src, "options": append([]string{"rbind"}, opts...)}
	}
	mounts := []map[string]any{
		{"destination": "/proc", "type": "proc", "source": "proc"},
		{"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"}},
		{"destination": "/dev/shm", "type": "tmpfs", "source": "shm", "options": []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}},
		{"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": []string{"nosuid", "noexec", "nodev"}},
		bind("/sys", "/sys", "nosuid", "noexec", "nodev", "ro"),
		bind(r.StateDir, r.StateDir, "nosuid", "nodev"),
	}
	// Host networking: the host's names for localhost and its resolver.
	for _, f := range []string{"/etc/hosts", "/etc/resolv.conf"} {
		if _, err := os.Stat(f); err == nil {
			mounts = append(mounts, bind(f, f, "nosuid", "nodev", "noexec", "ro"))
		}
	}
	spec := map[string]any{
		"ociVersion": "1.0.2",
		"process": map[string]any{
			"terminal":        false,
			"user":            map[string]any{"uid": 0, "gid": 0},
			"args":            argv,
			"env":             env,
			"cwd":             cwd,
			"capabilities":    map[string]any{},
			"noNewPrivileges": true,
		},
		"root":     map[string]any{"path": r.RootFS, "readonly": false},
		"hostname": "perf-gate",
		"mounts":   mounts,
		"linux": map[string]any{
			"uidMappings": []map[string]any{{"containerID": 0, "hostID": r.UID, "size": 1}},
			"gidMappings": []map[string]any{{"containerID": 0, "hostID": r.GID, "size": 1}},
			"namespaces":  []map[string]any{{"type": "pid"}, {"type": "ipc"}, {"type": "uts"}, {"type": "mount"}, {"type": "user"}},
			"maskedPaths": []string{"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
				"/proc/timer_stats", "/proc/sched_debug", "/sys/firmware", "/proc/scsi"},
			"readonlyPaths": []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"},
		},
	}
	return json.MarshalIndent(spec, "", " ")
}

// mergeEnv is the image's environment with the host's variables set over it, in the image's
// order, then the host's new ones; PATH is Docker's default when neither sets it.
func mergeEnv(image, host []string) []string {
	key := func(kv string) string { k, _, _ := strings.Cut(kv, "="); return k }
	out := slices.Clone(image)
	for _, kv := range host {
		if i := slices.IndexFunc(out, func(o string) bool { return key(o) == key(kv) }); i >= 0 {
			out[i] = kv
		} else {
			out = append(out, kv)
		}
	}
	if !slices.ContainsFunc(out, func(kv string) bool { return key(kv) == "PATH" }) {
		out = append([]string{defaultPath}, out...)
	}
	return out
}

// Runc is the runc binary perf-host runs images with (Debian's package puts it in /usr/sbin).
func Runc() (string, error) {
	for _, p := range []string{"/usr/sbin/runc", "/usr/bin/runc"} {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("runc"); err == nil {
		return p, nil
	}
	return "", errors.New("a container image needs runc on the host (Debian: apt-get install runc)")
}
