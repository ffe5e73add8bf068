// Package imagetest builds real container images for tests, with no registry and no daemon:
// layers from tars or files, an image config for this host, written as `docker save` writes
// an image (docker-archive) or as an OCI layout directory.
package imagetest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"runtime"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// LayerFromTar is a layer holding an uncompressed tar.
func LayerFromTar(b []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// LayerFromFile is a layer holding one executable file at path (no leading slash), as a
// Dockerfile's COPY of a static binary makes it.
func LayerFromFile(file, path string) (v1.Layer, error) {
	body, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: path, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(body))})
	tw.Write(body)
	tw.Close()
	return LayerFromTar(b.Bytes())
}

// Build is an image of layers on base (FROM scratch: empty.Image) with config, for linux and
// arch (empty: this host's).
func Build(layers []v1.Layer, config v1.Config, arch string) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	f, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	f = f.DeepCopy()
	f.OS, f.Architecture, f.Config = "linux", arch, config
	if arch == "" {
		f.Architecture = runtime.GOARCH
	}
	return mutate.ConfigFile(img, f)
}

// WriteArchive writes img as `docker save` does, tagged tag.
func WriteArchive(w io.Writer, img v1.Image, tag string) error {
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	return tarball.Write(ref, img, w)
}

// WriteLayout writes img into a new OCI layout directory, its platform in the index.
func WriteLayout(dir string, img v1.Image) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	f, err := img.ConfigFile()
	if err != nil {
		return err
	}
	return p.AppendImage(img, layout.WithPlatform(v1.Platform{OS: f.OS, Architecture: f.Architecture}))
}
