package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/perf-gate/perf-gate/benchmark-host/internal/release"
)

// whiteout marks, in a layer, a path that a lower layer holds and this one removes.
const whiteout = ".wh."

// checkLayers reads every layer, bottom first, before anything is written, and refuses the
// first entry that could not be unpacked safely, naming its layer: a path with '..', a device
// or fifo, a link that leads out of the root, an entry written through a symlinked directory
// of a lower layer (or its own), and layers that unpack past the limits together.
func checkLayers(layers []v1.Layer, lim release.Limits) error {
	var read int64
	links := map[string]string{} // symlinks of the layers so far: path -> target
	for i, l := range layers {
		name := fmt.Sprintf("layer %d of %d", i+1, len(layers))
		if d, err := l.Digest(); err == nil {
			name += " (" + d.String() + ")"
		}
		if err := checkLayer(l, name, lim, &read, links); err != nil {
			return err
		}
	}
	return nil
}

func checkLayer(l v1.Layer, layer string, lim release.Limits, read *int64, links map[string]string) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return fmt.Errorf("%s: cannot be read (is it in the archive?): %w", layer, err)
	}
	defer rc.Close()
	counted := &capped{r: rc, left: lim.MaxUncompressed - *read, what: fmt.Sprintf("%s: the layers unpack to more than %d bytes", layer, lim.MaxUncompressed)}
	defer func() { *read = lim.MaxUncompressed - counted.left }()
	tr := tar.NewReader(counted)
	for entries := 0; ; entries++ {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, release.ErrTooLarge) {
				return err
			}
			return fmt.Errorf("%s: not a readable tar: %w", layer, err)
		}
		if entries >= lim.MaxEntries {
			return fmt.Errorf("%s: more than %d entries: %w", layer, lim.MaxEntries, release.ErrTooLarge)
		}
		if err := checkEntry(h, links); err != nil {
			return fmt.Errorf("%s: %w", layer, err)
		}
	}
}

// checkEntry judges one entry of a layer, and keeps track of the symlinks the layers make.
func checkEntry(h *tar.Header, links map[string]string) error {
	name := strings.TrimLeft(h.Name, "/")
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return fmt.Errorf("%q: '..' is not allowed in paths", h.Name)
		}
	}
	name = path.Clean(name)
	if name == "." {
		return nil
	}
	for dir := path.Dir(name); dir != "."; dir = path.Dir(dir) {
		if target, ok := links[dir]; ok {
			return fmt.Errorf("%s: written through the symlink %s -> %q, which is not allowed", name, dir, target)
		}
	}
	base := path.Base(name)
	if strings.HasPrefix(base, whiteout) {
		delete(links, path.Join(path.Dir(name), strings.TrimPrefix(base, whiteout)))
		return nil
	}
	delete(links, name)
	switch h.Typeflag {
	case tar.TypeDir, tar.TypeReg:
	case tar.TypeSymlink:
		if !path.IsAbs(h.Linkname) {
			if to := path.Clean(path.Join(path.Dir(name), h.Linkname)); to == ".." || strings.HasPrefix(to, "../") {
				return fmt.Errorf("symlink %s -> %q leads out of the image's root", name, h.Linkname)
			}
		}
		links[name] = h.Linkname
	case tar.TypeLink:
		for _, part := range strings.Split(h.Linkname, "/") {
			if part == ".." {
				return fmt.Errorf("hard link %s -> %q: '..' is not allowed in paths", name, h.Linkname)
			}
		}
	case tar.TypeChar, tar.TypeBlock:
		return fmt.Errorf("%s is a device node (%d:%d): devices are not allowed in an image", name, h.Devmajor, h.Devminor)
	case tar.TypeFifo:
		return fmt.Errorf("%s is a fifo: fifos are not allowed in an image", name)
	default:
		return fmt.Errorf("%s: entries of type %q are not allowed in an image", name, h.Typeflag)
	}
	return nil
}
