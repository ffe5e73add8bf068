// Package release unpacks a build's tar.gz into a release directory, refusing anything that
// could write outside it: absolute paths, '..', links that lead out, devices, oversize input.
package release

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Limits bound what one deploy may write.
type Limits struct {
	MaxCompressed   int64 // bytes read from stdin
	MaxUncompressed int64 // bytes written, against decompression bombs
	MaxEntries      int
}

// DefaultLimits allow a 512 MiB tarball that unpacks to at most 2 GiB in 100,000 entries.
var DefaultLimits = Limits{MaxCompressed: 512 << 20, MaxUncompressed: 2 << 30, MaxEntries: 100_000}

// ErrTooLarge is returned when the tarball or its contents exceed the limits.
var ErrTooLarge = errors.New("too large")

// Unpack extracts the gzip-compressed tar on r into dir, which must not exist yet. On any
// error the partial directory is removed.
//
// Every write goes through an os.Root on dir, so the kernel-level resolution refuses any path
// that leads out of it, whatever chain of links it follows: judging link targets lexically
// accepted `sub/a -> ..`, `b -> sub/a/..`, `c -> b/..` and a hard link to `c/state.json`,
// which reached the host's state (docs/design/0017-host-faults.md). The lexical checks stay for
// their clear messages.
func Unpack(r io.Reader, dir string, lim Limits) (err error) {
	counted := &limitedReader{r: r, left: lim.MaxCompressed, limit: lim.MaxCompressed}
	gz, err := gzip.NewReader(counted)
	if err != nil {
		return fmt.Errorf("not a gzip stream: %w", orTooLarge(counted, err))
	}
	return unpack(gz, counted, dir, lim, Release)
}

// Root says how a tree judges absolute names and link targets.
type Root int

const (
	// Release: a build's tree, run from its own directory; absolute names and link targets
	// are refused.
	Release Root = iota
	// Image: a container image's root filesystem, run with itself as /; an absolute name or
	// link target means a path from that root: a link's target is rewritten relative to the
	// link, which resolves alike inside the container and, safely, on the host.
	Image
)

// UnpackTar extracts an uncompressed tar into dir (which must not exist yet) under the same
// rules and limits as Unpack; lim.MaxCompressed bounds the tar stream itself.
func UnpackTar(r io.Reader, dir string, lim Limits, root Root) error {
	counted := &limitedReader{r: r, left: lim.MaxUncompressed + lim.MaxUncompressed/8 + 1<<20, limit: lim.MaxUncompressed}
	return unpack(counted, counted, dir, lim, root)
}

func unpack(r io.Reader, counted *limitedReader, dir string, lim Limits, kind Root) (err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	u := &unpacking{root: root, tr: tar.NewReader(r), counted: counted, lim: lim}
	for entries := 0; ; entries++ {
		h, err := u.tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the tarball: %w", orTooLarge(counted, err))
		}
		if entries >= lim.MaxEntries {
			return fmt.Errorf("more than %d entries: %w", lim.MaxEntries, ErrTooLarge)
		}
		if kind == Image {
			fromRoot(h)
		}
		if err := u.entry(h); err != nil {
			return err
		}
	}
	// Drain so that trailing garbage past the size limit is still detected.
	if _, err := io.Copy(io.Discard, counted); err != nil || counted.over {
		return fmt.Errorf("tarball: %w", orTooLarge(counted, err))
	}
	return checkLinksResolveInside(root)
}

// unpacking is one tarball being written into its root.
type unpacking struct {
	root    *os.Root
	tr      *tar.Reader
	counted *limitedReader
	lim     Limits
	written int64 // the regular files' bytes so far
}

// entry writes the entry h, whose content the reader is at, inside the root.
func (u *unpacking) entry(h *tar.Header) error {
	name, err := safeName(h.Name)
	if err != nil {
		return err
	}
	if name == "." {
		return nil
	}
	if err := checkParents(u.root, name); err != nil {
		return err
	}
	if err := u.root.MkdirAll(path.Dir(name), 0o755); err != nil {
		return contained(name, err)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		if err := u.root.MkdirAll(name, 0o755); err != nil {
			return contained(name, err)
		}
	case tar.TypeReg:
		if u.written += h.Size; u.written > u.lim.MaxUncompressed {
			return fmt.Errorf("unpacks to more than %d bytes: %w", u.lim.MaxUncompressed, ErrTooLarge)
		}
		if err := writeFile(u.root, name, u.tr, h); err != nil {
			return fmt.Errorf("%s: %w", name, orTooLarge(u.counted, err))
		}
	case tar.TypeSymlink:
		if err := checkLink(name, h.Linkname); err != nil {
			return err
		}
		if err := u.root.Symlink(h.Linkname, name); err != nil {
			return contained(name, err)
		}
	case tar.TypeLink:
		linked, err := safeName(h.Linkname)
		if err != nil {
			return fmt.Errorf("hard link %s: %w", name, err)
		}
		if err := u.root.Link(linked, name); err != nil {
			return fmt.Errorf("hard link %s -> %s: %w", name, linked, contained(linked, err))
		}
	default:
		return fmt.Errorf("%s: entries of type %q (devices, fifos) are not allowed", name, h.Typeflag)
	}
	return nil
}

// fromRoot turns an image entry's absolute name, hard link and symlink target into paths
// inside the unpacked root: /usr/bin/awk -> /etc/alternatives/awk becomes
// usr/bin/awk -> ../../etc/alternatives/awk.
func fromRoot(h *tar.Header) {
	h.Name = strings.TrimLeft(h.Name, "/")
	if h.Typeflag == tar.TypeLink {
		h.Linkname = strings.TrimLeft(h.Linkname, "/")
	}
	if h.Typeflag == tar.TypeSymlink && path.IsAbs(h.Linkname) {
		up := strings.Count(path.Clean(h.Name), "/")
		h.Linkname = strings.Repeat("../", up) + strings.TrimLeft(path.Clean(h.Linkname), "/")
		if h.Linkname == "" {
			h.Linkname = "."
		}
	}
}

// checkLinksResolveInside follows every symlink of the finished release (including a hard
// link to a symlink) through the root: one whose resolution leaves the release is refused, as
// the service would follow it to the host's files. A link to a missing file inside is allowed.
func checkLinksResolveInside(root *os.Root) error {
	return fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink == 0 {
			return err
		}
		target, _ := root.Readlink(name)
		if _, err := root.Stat(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("symlink %s -> %q: %w", name, target, contained(name, err))
		}
		return nil
	})
}

// contained turns os.Root's refusal of a path that resolves outside it into the release's words.
func contained(name string, err error) error {
	if strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%s leads out of the release directory (through a chain of links)", name)
	}
	return err
}

// safeName cleans a tar path and refuses absolute paths and any '..' component.
func safeName(name string) (string, error) {
	if name == "" {
		return "", errors.New("an entry has an empty name")
	}
	if strings.HasPrefix(name, "/") || filepath.IsAbs(name) {
		return "", fmt.Errorf("%q: absolute paths are not allowed", name)
	}
	for _, part := range strings.Split(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%q: '..' is not allowed in paths", name)
		}
	}
	return path.Clean(name), nil
}

// checkLink refuses a symlink whose target, judged lexically from the link's directory, leaves
// the release directory (a clear message; checkLinksResolveInside judges what it resolves to).
func checkLink(name, target string) error {
	if target == "" || path.IsAbs(target) {
		return fmt.Errorf("symlink %s -> %q: absolute or empty targets are not allowed", name, target)
	}
	resolved := path.Clean(path.Join(path.Dir(name), target))
	if resolved == ".." || strings.HasPrefix(resolved, "../") {
		return fmt.Errorf("symlink %s -> %q leads out of the release directory", name, target)
	}
	return nil
}

// checkParents refuses to write through a symlinked directory inside the release, which
// could point anywhere once its own target is followed.
func checkParents(root *os.Root, name string) error {
	parts := strings.Split(path.Dir(name), "/")
	for i := range parts {
		cur := strings.Join(parts[:i+1], "/")
		if cur == "." {
			continue
		}
		if fi, err := root.Lstat(cur); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%s: writing through a symlinked directory is not allowed", name)
		}
	}
	return nil
}

func writeFile(root *os.Root, name string, r io.Reader, h *tar.Header) error {
	// Keep the executable bits only; never setuid, setgid or world-writable.
	mode := os.FileMode(0o644)
	if h.Mode&0o111 != 0 {
		mode = 0o755
	}
	f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.CopyN(f, r, h.Size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// limitedReader fails once more than left bytes have been read.
type limitedReader struct {
	r           io.Reader
	left, limit int64
	over        bool
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		l.over = true
		return 0, ErrTooLarge
	}
	if int64(len(p)) > l.left+1 {
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		l.over = true
		return n, ErrTooLarge
	}
	return n, err
}

func orTooLarge(l *limitedReader, err error) error {
	if l.over {
		return fmt.Errorf("the tarball is larger than %d bytes: %w", l.limit, ErrTooLarge)
	}
	return err
}
