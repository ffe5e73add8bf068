package profile

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// symbolizer names frames: perf's name when it found one (the host's libraries and kernel),
// else the symbol of the arm's own binary, read from its release with debug/elf, else the
// file's base name, so that unnamed code still adds up by the file it is in.
type symbolizer struct {
	arms  []Arm
	files map[string]*elfSymbols // by path under a release; nil when unreadable
}

func newSymbolizer(arms []Arm) *symbolizer {
	return &symbolizer{arms: arms, files: map[string]*elfSymbols{}}
}

func (s *symbolizer) close() {
	for _, f := range s.files {
		if f != nil {
			f.close()
		}
	}
}

// name is a frame's function: addr is perf's address within the file dso, sym its name for it.
func (s *symbolizer) name(addr, sym, dso string) string {
	if sym != "[unknown]" && sym != "" {
		return sym
	}
	if dso == "[kernel.kallsyms]" {
		return "[kernel]"
	}
	if f := s.release(dso); f != nil {
		off, err := strconv.ParseUint(addr, 16, 64)
		if err == nil {
			if name := f.lookup(off); name != "" {
				return name
			}
		}
	}
	return "[" + filepath.Base(dso) + "]"
}

// release opens the release file an arm's working-copy path stands for.
func (s *symbolizer) release(dso string) *elfSymbols {
	for _, a := range s.arms {
		if a.Work == "" || a.Release == "" || !strings.HasPrefix(dso, a.Work+"/") {
			continue
		}
		rel := strings.TrimPrefix(dso, a.Work+"/")
		key := a.Release + "\x00" + rel
		if f, ok := s.files[key]; ok {
			return f
		}
		f, _ := openSymbols(a.Release, rel)
		s.files[key] = f
		return f
	}
	return nil
}

// elfSymbols are a binary's function symbols by address, and its loadable segments, which map
// the file offsets perf gives to the addresses the symbols have.
type elfSymbols struct {
	file  *elf.File
	funcs []elf.Symbol
	loads []*elf.Prog
}

// openSymbols reads the symbols of rel inside the release root (through os.Root: a link in a
// build never leads out of it). A build is a pull request's: debug/elf is memory-safe, and a
// malformed file is only a frame left unnamed.
func openSymbols(root, rel string) (e *elfSymbols, err error) {
	defer func() {
		if r := recover(); r != nil {
			e, err = nil, fmt.Errorf("%s: unreadable ELF: %v", rel, r)
		}
	}()
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	fh, err := r.Open(rel)
	if err != nil {
		return nil, err
	}
	f, err := elf.NewFile(fh)
	if err != nil {
		fh.Close()
		return nil, err
	}
	syms, err := f.Symbols()
	if err != nil {
		f.Close()
		return nil, err
	}
	e = &elfSymbols{file: f}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 {
			e.funcs = append(e.funcs, s)
		}
	}
	sort.Slice(e.funcs, func(i, j int) bool { return e.funcs[i].Value < e.funcs[j].Value })
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			e.loads = append(e.loads, p)
		}
	}
	return e, nil
}

func (e *elfSymbols) close() { e.file.Close() }

// lookup names the function at file offset off.
func (e *elfSymbols) lookup(off uint64) string {
	addr, ok := uint64(0), false
	for _, p := range e.loads {
		if off >= p.Off && off < p.Off+p.Filesz {
			addr, ok = off-p.Off+p.Vaddr, true
			break
		}
	}
	if !ok {
		return ""
	}
	i := sort.Search(len(e.funcs), func(i int) bool { return e.funcs[i].Value > addr }) - 1
	if i < 0 {
		return ""
	}
	if s := e.funcs[i]; s.Size == 0 || addr < s.Value+s.Size {
		return s.Name
	}
	return ""
}
