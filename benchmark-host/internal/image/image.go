// Package image takes a container image as a build: an image tarball as `docker save` and
// `podman save` write it (docker-archive), an OCI archive, or an OCI layout directory packed
// as a tar (gzipped or not), recognised by its content. Deploy checks every layer against the
// limits a build's tarball is held to (sizes, no devices, no path or link out of the root),
// applies the layers with their whiteouts into a root filesystem, and keeps the image's run
// configuration beside it; Spec describes how runc runs it as an arm (see runtime.go and
// docs/design/0007-container-images.md).
package image

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
)

// RootFS and ConfigFile are where a deployed image's root filesystem and run configuration
// lie in its release directory.
const (
	RootFS     = "rootfs"
	ConfigFile = "image.json"
)

// Config is what perf-host keeps of an image to run it.
type Config struct {
	Digest       string   `json:"digest"`
	OS           string   `json:"os"`
	Architecture string   `json:"architecture"`
	Entrypoint   []string `json:"entrypoint,omitempty"`
	Cmd          []string `json:"cmd,omitempty"`
	Env          []string `json:"env,omitempty"`
	WorkingDir   string   `json:"working_dir,omitempty"`
	User         string   `json:"user,omitempty"`
	Layers       int      `json:"layers"`
}

// Argv is what the image runs by itself: its entrypoint, then its cmd.
func (c *Config) Argv() []string { return append(slices.Clone(c.Entrypoint), c.Cmd...) }

// AsksForRoot says whether the image's user is root (or unset, which is root).
func (c *Config) AsksForRoot() bool {
	u, _, _ := strings.Cut(c.User, ":")
	return u == "" || u == "root" || u == "0"
}

// Load reads the image configuration of a deployed release; nil when the release is not an image.
func Load(releaseDir string) (*Config, error) {
	b, err := os.ReadFile(filepath.Join(releaseDir, ConfigFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var c Config
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	return &c, nil
}

// hex64 names a blob or an old docker-archive's layer directory.
var hex64 = regexp.MustCompile(`^(sha256:)?[0-9a-f]{64}(\.json|\.tar(\.gz)?)?$`)

// Sniff says whether the start of an upload is a container image: a tar (gzipped or not)
// whose first file is one of an image archive's (manifest.json, index.json, oci-layout,
// repositories, a blob). A build's tarball starts with its own files.
func Sniff(prefix []byte) bool {
	var r io.Reader = bytes.NewReader(prefix)
	if len(prefix) >= 2 && prefix[0] == 0x1f && prefix[1] == 0x8b {
		gz, err := gzip.NewReader(r)
		if err != nil {
			return false
		}
		r = gz
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err != nil {
			return false
		}
		name := path.Clean(strings.TrimLeft(h.Name, "/"))
		first, _, _ := strings.Cut(name, "/")
		if h.Typeflag == tar.TypeDir {
			if name == "." || first == "blobs" || hex64.MatchString(first) {
				continue
			}
			return false
		}
		switch {
		case name == "manifest.json", name == "index.json", name == "oci-layout", name == "repositories":
			return true
		case first == "blobs", hex64.MatchString(first):
			return true
		}
		return false
	}
}

// Unpack reads an image upload from r and writes its root filesystem to dir/rootfs and its
// run configuration to dir/image.json; dir must not exist yet and is removed on any error.
// The upload is held to lim.MaxCompressed, the layers together to lim.MaxUncompressed.
// Errors name the layer (its index from the bottom and its digest) or the config's field.
func Unpack(r io.Reader, dir string, lim release.Limits) (err error) {
	work, err := os.MkdirTemp(filepath.Dir(dir), ".image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	archive := filepath.Join(work, "image.tar")
	if err := spool(r, archive, lim); err != nil {
		return err
	}
	img, err := open(archive, work, lim)
	if err != nil {
		return err
	}
	cfg, err := checkConfig(img)
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("not a valid image: its layers: %w", err)
	}
	cfg.Layers = len(layers)
	if err := checkLayers(layers, lim); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	flat := mutate.Extract(img)
	defer flat.Close()
	if err := release.UnpackTar(flat, filepath.Join(dir, RootFS), lim, release.Image); err != nil {
		return fmt.Errorf("the image's root filesystem: %w", err)
	}
	b, _ := json.MarshalIndent(cfg, "", "  ")
	return os.WriteFile(filepath.Join(dir, ConfigFile), b, 0o644)
}

// spool writes the upload to file as a plain tar, unzipping it when gzipped, within the limits.
func spool(r io.Reader, file string, lim release.Limits) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	defer f.Close()
	in := &capped{r: r, left: lim.MaxCompressed, what: fmt.Sprintf("the image is larger than %d bytes", lim.MaxCompressed)}
	br := bufio.NewReader(in)
	var src io.Reader = br
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		gz, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("not a gzip stream: %w", err)
		}
		src = &capped{r: gz, left: lim.MaxUncompressed, what: fmt.Sprintf("the image unzips to more than %d bytes", lim.MaxUncompressed)}
	}
	if _, err := io.Copy(f, src); err != nil {
		return fmt.Errorf("reading the image: %w", err)
	}
	return f.Close()
}

// open reads the archive as a docker-archive (manifest.json) or an OCI archive (index.json
// and oci-layout, unpacked into work for the layout reader), and picks the image for this host.
func open(archive, work string, lim release.Limits) (v1.Image, error) {
	names, err := tarNames(archive)
	if err != nil {
		return nil, fmt.Errorf("not an image archive (a tar of manifest.json or index.json and blobs): %w", err)
	}
	switch {
	case names["manifest.json"]:
		img, err := tarball.ImageFromPath(archive, nil)
		if err != nil {
			return nil, fmt.Errorf("docker-archive: manifest.json: %w", err)
		}
		return img, nil
	case names["index.json"] && names["oci-layout"]:
		dir := filepath.Join(work, "layout")
		f, err := os.Open(archive)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := release.UnpackTar(f, dir, lim, release.Release); err != nil {
			return nil, fmt.Errorf("OCI archive: %w", err)
		}
		return fromLayout(dir)
	}
	return nil, errors.New("not an image archive: it holds neither manifest.json (docker save, podman save) nor index.json and oci-layout (an OCI archive or layout)")
}

// tarNames lists the top-level file names of a tar ("./" removed).
func tarNames(archive string) (map[string]bool, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names := map[string]bool{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, nil
		}
		if err != nil {
			return nil, err
		}
		names[path.Clean(strings.TrimLeft(h.Name, "/"))] = true
	}
}

// fromLayout picks, from an OCI layout's index (and the indexes it names), the image for this
// host's platform; an index that holds none names the platforms it holds.
func fromLayout(dir string) (v1.Image, error) {
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, fmt.Errorf("OCI layout: index.json: %w", err)
	}
	var found []string
	img, err := pick(idx, &found)
	if err != nil {
		return nil, err
	}
	if img == nil {
		return nil, fmt.Errorf("OCI layout: index.json holds no image for %s (it holds %s): build it for %s", hostPlatform(), strings.Join(found, ", "), hostPlatform())
	}
	return img, nil
}

func pick(idx v1.ImageIndex, found *[]string) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("OCI layout: index.json: %w", err)
	}
	for _, d := range m.Manifests {
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("OCI layout: index %s: %w", d.Digest, err)
			}
			if img, err := pick(child, found); img != nil || err != nil {
				return img, err
			}
		case d.MediaType.IsImage():
			if d.Platform != nil && (d.Platform.OS != "linux" || d.Platform.Architecture != runtime.GOARCH) {
				*found = append(*found, d.Platform.OS+"/"+d.Platform.Architecture)
				continue
			}
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("OCI layout: manifest %s: %w", d.Digest, err)
			}
			return img, nil
		}
	}
	return nil, nil
}

func hostPlatform() string { return "linux/" + runtime.GOARCH }

// checkConfig reads the image's configuration and refuses one for another platform.
func checkConfig(img v1.Image) (*Config, error) {
	f, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("not a valid image: its config: %w", err)
	}
	if f.OS != "linux" || f.Architecture != runtime.GOARCH {
		return nil, fmt.Errorf("config.os/architecture: the image is for %q/%q; this host runs %s: build it for %s (docker build --platform %s)", f.OS, f.Architecture, hostPlatform(), hostPlatform(), hostPlatform())
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("not a valid image: %w", err)
	}
	c := f.Config
	return &Config{Digest: digest.String(), OS: f.OS, Architecture: f.Architecture, Entrypoint: c.Entrypoint, Cmd: c.Cmd,
		Env: c.Env, WorkingDir: c.WorkingDir, User: c.User}, nil
}

// capped fails once more than left bytes were read, saying what.
type capped struct {
	r    io.Reader
	left int64
	what string
}

func (c *capped) Read(p []byte) (int, error) {
	if c.left <= 0 {
		var one [1]byte
		if n, _ := c.r.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%s: %w", c.what, release.ErrTooLarge)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	return n, err
}
