package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	. "github.com/perf-gate/perf-gate/benchmark-host/internal/image/imagetest"
	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
)

var testLimits = release.Limits{MaxCompressed: 64 << 20, MaxUncompressed: 16 << 20, MaxEntries: 1000}

// entry is one tar entry of a test layer.
type entry struct {
	name, link string
	typ        byte
	mode       int64
	body       string
	size       int64 // zeros, when body is empty
}

func layerTar(t *testing.T, entries ...entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Linkname: e.link, Typeflag: e.typ, Mode: e.mode}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if e.typ == tar.TypeReg {
			h.Size = int64(len(e.body)) + e.size
		}
		if e.typ == tar.TypeChar || e.typ == tar.TypeBlock {
			h.Devmajor, h.Devminor = 8, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if e.typ == tar.TypeReg {
			io.WriteString(tw, e.body)
			io.CopyN(tw, zeros{}, e.size)
		}
	}
	tw.Close()
	return b.Bytes()
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// testImage is an image of the given layers for this host, unless arch says otherwise.
func testImage(t *testing.T, arch string, entrypoint []string, layers ...[]byte) v1.Image {
	t.Helper()
	var ls []v1.Layer
	for _, l := range layers {
		layer, err := LayerFromTar(l)
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, layer)
	}
	img, err := Build(ls, v1.Config{Entrypoint: entrypoint, Env: []string{"PATH=/bin", "GREETING=hello"}, WorkingDir: "/app"}, arch)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

func save(t *testing.T, img v1.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteArchive(&b, img, "perf-gate.test/service:test"); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func unpack(t *testing.T, upload []byte) (string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "release")
	return dir, Unpack(bytes.NewReader(upload), dir, testLimits)
}

func app(t *testing.T) []byte {
	return layerTar(t, entry{name: "app/", typ: tar.TypeDir}, entry{name: "app/server", typ: tar.TypeReg, mode: 0o755, body: "#!/bin/sh\n"})
}

// wantRefused checks the error names what it must, and that nothing of the release is left.
func wantRefused(t *testing.T, upload []byte, want ...string) {
	t.Helper()
	dir, err := unpack(t, upload)
	if err == nil {
		t.Fatalf("accepted; want an error naming %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %q", err, w)
		}
	}
	if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
		t.Errorf("%s left behind after %v", dir, err)
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), ".image-*"))
	if len(left) > 0 {
		t.Errorf("staging left behind: %v", left)
	}
	t.Logf("refused: %v", err)
}

func TestHostileImagesAreRefusedNamingTheLayerOrField(t *testing.T) {
	entrypoint := []string{"/app/server"}
	t.Run("a layer with a ../ path", func(t *testing.T) {
		wantRefused(t, save(t, testImage(t, "", entrypoint, app(t), layerTar(t, entry{name: "app/../../etc/cron.d/x", typ: tar.TypeReg, body: "x"}))), "layer 2 of 2 (sha256:", "'..' is not allowed")
	})
	t.Run("a symlink out of the root, then a write through it", func(t *testing.T) {
		escape := layerTar(t, entry{name: "up", typ: tar.TypeSymlink, link: "../../../../etc"})
		wantRefused(t, save(t, testImage(t, "", entrypoint, app(t), escape)), "layer 2 of 2", "symlink up -> \"../../../../etc\" leads out of the image's root")
		// An absolute link means the image's own /etc; writing through it is refused all the same.
		abs := layerTar(t, entry{name: "data", typ: tar.TypeSymlink, link: "/etc"})
		through := layerTar(t, entry{name: "data/passwd", typ: tar.TypeReg, body: "root::0:0::/:/bin/sh\n"})
		wantRefused(t, save(t, testImage(t, "", entrypoint, app(t), abs, through)), "layer 3 of 3", "data/passwd: written through the symlink data -> \"/etc\"")
	})
	t.Run("a device node", func(t *testing.T) {
		wantRefused(t, save(t, testImage(t, "", entrypoint, app(t), layerTar(t, entry{name: "dev/sda", typ: tar.TypeBlock}))), "layer 2 of 2", "dev/sda is a device node (8:0)")
	})
	t.Run("a layer that unzips past the limit (zip bomb)", func(t *testing.T) {
		bomb := layerTar(t, entry{name: "zeros", typ: tar.TypeReg, size: 64 << 20})
		wantRefused(t, save(t, testImage(t, "", entrypoint, app(t), bomb)), "layer 2 of 2", "unpack to more than 16777216 bytes")
	})
	t.Run("an image for another architecture", func(t *testing.T) {
		wantRefused(t, save(t, testImage(t, "arm64", entrypoint, app(t))), "config.os/architecture", `"linux"/"arm64"`, "docker build --platform linux/amd64")
	})
	t.Run("a tarball that is not an image", func(t *testing.T) {
		wantRefused(t, layerTar(t, entry{name: "manifest.json", typ: tar.TypeReg, body: "not json"}), "docker-archive: manifest.json")
		wantRefused(t, layerTar(t, entry{name: "blobs/sha256/" + strings.Repeat("a", 64), typ: tar.TypeReg, body: "x"}), "neither manifest.json")
	})
	t.Run("a manifest naming a missing layer", func(t *testing.T) {
		full := save(t, testImage(t, "", entrypoint, app(t)))
		wantRefused(t, dropLayers(t, full), "docker-archive: manifest.json", ".tar.gz not found in tar")
	})
	t.Run("an OCI index with no image for this host", func(t *testing.T) {
		dir := t.TempDir()
		if err := WriteLayout(dir, testImage(t, "arm64", entrypoint, app(t))); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, tarDir(t, dir), "index.json holds no image for linux/amd64 (it holds linux/arm64)")
	})
}

// dropLayers removes the layer files from a docker-archive, keeping its manifest.
func dropLayers(t *testing.T, archive []byte) []byte {
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	tr := tar.NewReader(bytes.NewReader(archive))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if strings.HasSuffix(h.Name, ".tar.gz") {
			continue
		}
		tw.WriteHeader(h)
		io.Copy(tw, tr)
	}
	tw.Close()
	return out.Bytes()
}

// tarDir packs a directory as the CLI packs a build directory: tar -czf - -C dir .
func tarDir(t *testing.T, dir string) []byte {
	out, err := exec.Command("tar", "-czf", "-", "-C", dir, ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAnImageUnpacksWithItsWhiteoutsLinksAndConfig(t *testing.T) {
	base := layerTar(t,
		entry{name: "app/", typ: tar.TypeDir},
		entry{name: "app/server", typ: tar.TypeReg, mode: 0o4755, body: "v1"},
		entry{name: "app/old.conf", typ: tar.TypeReg, body: "old"},
		entry{name: "etc/", typ: tar.TypeDir},
		entry{name: "etc/real", typ: tar.TypeReg, body: "real"},
		entry{name: "usr/bin/", typ: tar.TypeDir},
		entry{name: "usr/bin/tool", typ: tar.TypeSymlink, link: "/etc/real"})
	top := layerTar(t,
		entry{name: "app/.wh.old.conf", typ: tar.TypeReg},
		entry{name: "app/server", typ: tar.TypeReg, mode: 0o6755, body: "v2"})
	img := testImage(t, "", []string{"/app/server", "--flag"}, base, top)
	layoutDir := t.TempDir()
	if err := WriteLayout(layoutDir, img); err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(save(t, img))
	zw.Close()
	for name, upload := range map[string][]byte{"docker-archive": save(t, img), "docker-archive, gzipped": gz.Bytes(), "OCI layout, packed": tarDir(t, layoutDir)} {
		t.Run(name, func(t *testing.T) {
			if !Sniff(upload[:min(len(upload), 64<<10)]) {
				t.Fatal("not recognised as an image")
			}
			dir, err := unpack(t, upload)
			if err != nil {
				t.Fatal(err)
			}
			root := filepath.Join(dir, RootFS)
			if b, _ := os.ReadFile(filepath.Join(root, "app/server")); string(b) != "v2" {
				t.Errorf("app/server = %q, want the top layer's v2", b)
			}
			if fi, _ := os.Stat(filepath.Join(root, "app/server")); fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 || fi.Mode().Perm() != 0o755 {
				t.Errorf("app/server mode %v: setuid/setgid kept", fi.Mode())
			}
			if _, err := os.Lstat(filepath.Join(root, "app/old.conf")); !os.IsNotExist(err) {
				t.Errorf("app/old.conf survived its whiteout: %v", err)
			}
			if link, _ := os.Readlink(filepath.Join(root, "usr/bin/tool")); link != "../../etc/real" {
				t.Errorf("usr/bin/tool -> %q, want the absolute link made relative to the root", link)
			}
			cfg, err := Load(dir)
			if err != nil || cfg == nil {
				t.Fatalf("Load: %v %v", cfg, err)
			}
			if got := strings.Join(cfg.Argv(), " "); got != "/app/server --flag" || cfg.WorkingDir != "/app" || cfg.Layers != 2 || !cfg.AsksForRoot() {
				t.Errorf("config %+v", cfg)
			}
		})
	}
	build := t.TempDir()
	os.MkdirAll(filepath.Join(build, "bin"), 0o755)
	os.WriteFile(filepath.Join(build, "bin/server"), []byte("x"), 0o755)
	if Sniff(tarDir(t, build)) {
		t.Error("a build's tar.gz was taken for an image")
	}
}
