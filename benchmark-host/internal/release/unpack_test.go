package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

type entry struct {
	name, body, link string
	typ              byte
	mode             int64
}

// Tarball builds a tar.gz in memory; tests in other packages use it too.
func tarball(t testing.TB, entries ...entry) []byte {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Linkname: e.link, Mode: e.mode, Size: int64(len(e.body))}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	tw.Close()
	gz.Close()
	return buf.Bytes()
}

func TestUnpacksAReleaseKeepingExecBits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rel")
	tb := tarball(t,
		entry{name: "bin/", typ: tar.TypeDir},
		entry{name: "bin/service", body: "#!/bin/sh\n", mode: 0o4755},
		entry{name: "config/app.json", body: "{}"},
		entry{name: "current", typ: tar.TypeSymlink, link: "bin/service"},
		entry{name: "config/link", typ: tar.TypeSymlink, link: "../bin/service"},
		entry{name: "hard", typ: tar.TypeLink, link: "config/app.json"},
	)
	if err := Unpack(bytes.NewReader(tb), dir, DefaultLimits); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "bin/service"))
	if err != nil || fi.Mode().Perm() != 0o755 || fi.Mode()&os.ModeSetuid != 0 {
		t.Errorf("bin/service mode %v (err %v), want 0755 without setuid", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "config/link")); string(b) != "#!/bin/sh\n" {
		t.Errorf("relative symlink inside the release not followed: %q", b)
	}
}

func TestRefusesHostileTarballsAndLeavesNothing(t *testing.T) {
	cases := map[string]struct {
		tb   []byte
		want string
	}{
		"dot-dot path":          {tarball(t, entry{name: "../escape", body: "x"}), "'..'"},
		"nested dot-dot":        {tarball(t, entry{name: "a/../../escape", body: "x"}), "'..'"},
		"absolute path":         {tarball(t, entry{name: "/etc/cron.d/evil", body: "x"}), "absolute"},
		"symlink out":           {tarball(t, entry{name: "l", typ: tar.TypeSymlink, link: "../../etc/passwd"}), "leads out"},
		"absolute symlink":      {tarball(t, entry{name: "l", typ: tar.TypeSymlink, link: "/etc/passwd"}), "absolute"},
		"write through symlink": {tarball(t, entry{name: "d", typ: tar.TypeSymlink, link: "."}, entry{name: "d/x", body: "x"}), "symlinked directory"},
		"hard link out":         {tarball(t, entry{name: "h", typ: tar.TypeLink, link: "../../etc/passwd"}), "'..'"},
		"device":                {tarball(t, entry{name: "dev", typ: tar.TypeChar}), "not allowed"},
		"not gzip":              {[]byte("plain text"), "gzip"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "rel")
			err := Unpack(bytes.NewReader(c.tb), dir, DefaultLimits)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if left, _ := os.ReadDir(parent); len(left) != 0 {
				t.Errorf("left %d entries behind", len(left))
			}
		})
	}
}

func TestRefusesOversizeInput(t *testing.T) {
	big := tarball(t, entry{name: "blob", body: strings.Repeat("x", 1<<20)})
	for name, lim := range map[string]Limits{
		"compressed":   {MaxCompressed: int64(len(big)) - 10, MaxUncompressed: 1 << 30, MaxEntries: 10},
		"uncompressed": {MaxCompressed: 1 << 30, MaxUncompressed: 1 << 19, MaxEntries: 10},
		"entries":      {MaxCompressed: 1 << 30, MaxUncompressed: 1 << 30, MaxEntries: 0},
	} {
		dir := filepath.Join(t.TempDir(), "rel")
		if err := Unpack(bytes.NewReader(big), dir, lim); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%s limit: error %v, want ErrTooLarge", name, err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s limit: release dir left behind", name)
		}
	}
}

// A symlink chain whose every link looks inside the release when judged lexically, but leads
// out physically (sub/a -> .. is the release itself, so sub/a/.. is its parent), and a hard
// link through it to the state beside the releases. The layout is the host's:
// ROOT/state.json beside ROOT/releases/REL.
func TestRefusesSymlinkChainsAndHardLinksThroughThem(t *testing.T) {
	chain := []entry{
		{name: "sub/", typ: tar.TypeDir},
		{name: "sub/a", typ: tar.TypeSymlink, link: ".."},
		{name: "b", typ: tar.TypeSymlink, link: "sub/a/.."},
		{name: "c", typ: tar.TypeSymlink, link: "b/.."},
	}
	with := func(extra ...entry) []entry { return append(append([]entry{}, chain...), extra...) }
	cases := map[string]struct {
		entries []entry
		want    string
	}{
		"symlink chain":           {chain, "leads out of the release"},
		"hard link through it":    {with(entry{name: "statecopy", typ: tar.TypeLink, link: "c/state.json"}), "leads out of the release"},
		"file written through it": {with(entry{name: "c/planted", body: "x"}), "symlinked directory"},
		"dir made through it":     {with(entry{name: "b/planted/", typ: tar.TypeDir}), "symlinked directory"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			state := filepath.Join(root, "state.json")
			os.WriteFile(state, []byte(`{"champion":"aaaaaaa"}`), 0o600)
			os.Mkdir(filepath.Join(root, "releases"), 0o700)
			dir := filepath.Join(root, "releases", "rel")
			err := Unpack(bytes.NewReader(tarball(t, c.entries...)), dir, DefaultLimits)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			t.Logf("refused: %v", err)
			if left, _ := os.ReadDir(filepath.Join(root, "releases")); len(left) != 0 {
				t.Errorf("left %d entries behind in releases/", len(left))
			}
			if b, _ := os.ReadFile(state); string(b) != `{"champion":"aaaaaaa"}` {
				t.Errorf("state.json changed: %q", b)
			}
			if fi, _ := os.Stat(state); fi.Sys().(*syscall.Stat_t).Nlink != 1 {
				t.Errorf("state.json gained a hard link")
			}
		})
	}
}
