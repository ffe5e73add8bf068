package image

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSpecRunsTheImageAsTheArmsUserOnTheHostsNetwork(t *testing.T) {
	c := &Config{Digest: "sha256:abc", Entrypoint: []string{"/app/server"}, Cmd: []string{"--serve"}, Env: []string{"PORT=80", "LANG=C"}}
	raw, err := c.Spec(Run{RootFS: "/arm/work/rootfs", Env: []string{"PORT=8001", "STATE_DIR=/arm/state", "GOMAXPROCS=2"}, StateDir: "/arm/state", UID: 1001, GID: 1002})
	if err != nil {
		t.Fatal(err)
	}
	var spec struct {
		Process struct {
			User            struct{ UID, GID int }
			Args, Env       []string
			Cwd             string
			NoNewPrivileges bool
			Capabilities    map[string][]string
		}
		Mounts []struct{ Destination, Source string }
		Linux  struct {
			UIDMappings []struct{ ContainerID, HostID, Size int } `json:"uidMappings"`
			Namespaces  []struct{ Type string }
		}
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		t.Fatal(err)
	}
	p := spec.Process
	if got := strings.Join(p.Args, " "); got != "/app/server --serve" || p.Cwd != "/" || !p.NoNewPrivileges || len(p.Capabilities) != 0 {
		t.Errorf("process %+v", p)
	}
	// The host's PORT wins over the image's, in the image's order; PATH is Docker's default.
	if got := strings.Join(p.Env, " "); got != defaultPath+" PORT=8001 LANG=C STATE_DIR=/arm/state GOMAXPROCS=2" {
		t.Errorf("env %q", got)
	}
	if m := spec.Linux.UIDMappings; len(m) != 1 || m[0].ContainerID != 0 || m[0].HostID != 1001 || m[0].Size != 1 {
		t.Errorf("uid mappings %+v: want the container's 0 to be the arm's user alone", m)
	}
	for _, ns := range spec.Linux.Namespaces {
		if ns.Type == "network" || ns.Type == "cgroup" {
			t.Errorf("namespace %s: the container shares the host's network and stays in the arm's cgroup", ns.Type)
		}
	}
	state := false
	for _, m := range spec.Mounts {
		state = state || (m.Destination == "/arm/state" && m.Source == "/arm/state")
	}
	if !state {
		t.Errorf("STATE_DIR is not bound at its own path: %+v", spec.Mounts)
	}
	// service.command wins over the image's entrypoint and cmd.
	raw, _ = c.Spec(Run{RootFS: "/r", Argv: []string{"./bin/other"}, StateDir: "/s"})
	if !strings.Contains(string(raw), `"./bin/other"`) || strings.Contains(string(raw), `"--serve"`) {
		t.Errorf("service.command did not replace the image's argv:\n%s", raw)
	}
	if _, err := (&Config{Digest: "sha256:abc"}).Spec(Run{RootFS: "/r", StateDir: "/s"}); err == nil || !strings.Contains(err.Error(), "service.command: the image sha256:abc has no entrypoint or cmd") {
		t.Errorf("an image without entrypoint or cmd: %v", err)
	}
}
