package plan

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// Template is a string with {{…}} placeholders for per-request values:
//
//	{{seq}}     the request's index on the run's schedule (0, 1, 2, …)
//	{{rand}}    a 64-bit pseudo-random number derived from the seed and the request's draw
//	{{rand N}}  the same, reduced to [0, N): a key pool of N keys
//	{{run}}     the plan's run_id (fresh state per run)
//	{{arm}}     champion or challenger
//	{{slice}}   the slice index (-1 during warmup)
//
// Expansion is deterministic for a given seed, so a run can be replayed exactly. A measured
// request's draw is its position in its slice, the same for both arms of a pair, so {{rand N}}
// gives the champion and the challenger of a pair the same keys in the same order.
type Template struct {
	parts []part
}

type partKind uint8

const (
	partLiteral partKind = iota
	partSeq
	partRand
	partRun
	partArm
	partSlice
)

type part struct {
	kind partKind
	lit  string
	n    uint64 // modulus for {{rand N}}; 0 means the full 64 bits
}

// Vars are the per-request values a template can use.
type Vars struct {
	Seed  uint64
	Seq   uint64
	Draw  uint64 // what {{rand}} and the workload entry are drawn from
	Run   string
	Arm   string
	Slice int
}

// ParseTemplate compiles s; an unclosed or unknown placeholder is an error.
func ParseTemplate(s string) (Template, error) {
	var t Template
	whole := s // s is what is left to parse; errors quote the whole
	for {
		open := strings.Index(s, "{{")
		if open < 0 {
			break
		}
		if open > 0 {
			t.parts = append(t.parts, part{kind: partLiteral, lit: s[:open]})
		}
		end := strings.Index(s[open:], "}}")
		if end < 0 {
			return t, fmt.Errorf("template %q: unclosed {{", whole)
		}
		p, err := parsePlaceholder(strings.TrimSpace(s[open+2 : open+end]))
		if err != nil {
			return t, fmt.Errorf("template %q: %w", whole, err)
		}
		t.parts = append(t.parts, p)
		s = s[open+end+2:]
	}
	if strings.Contains(s, "}}") {
		return t, fmt.Errorf("template %q: }} without {{", whole)
	}
	if s != "" {
		t.parts = append(t.parts, part{kind: partLiteral, lit: s})
	}
	return t, nil
}

func parsePlaceholder(body string) (part, error) {
	fields := strings.Fields(body)
	if len(fields) == 0 {
		return part{}, fmt.Errorf("empty placeholder {{}}")
	}
	name := fields[0]
	kinds := map[string]partKind{"seq": partSeq, "rand": partRand, "run": partRun, "arm": partArm, "slice": partSlice}
	k, ok := kinds[name]
	if !ok {
		return part{}, fmt.Errorf("unknown placeholder {{%s}} (known: seq, rand, rand N, run, arm, slice)", name)
	}
	if name == "rand" && len(fields) == 2 {
		n, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil || n == 0 {
			return part{}, fmt.Errorf("{{rand N}} needs a positive integer N, got %q", fields[1])
		}
		return part{kind: partRand, n: n}, nil
	}
	if len(fields) > 1 {
		return part{}, fmt.Errorf("{{%s}} takes no argument", name)
	}
	return part{kind: k}, nil
}

// IsStatic reports whether the template has no placeholders, so its expansion can be reused.
func (t Template) IsStatic() bool {
	for _, p := range t.parts {
		if p.kind != partLiteral {
			return false
		}
	}
	return true
}

// String expands a static template.
func (t Template) String() string {
	return string(t.Append(nil, &Vars{}))
}

// Append expands the template onto buf.
func (t Template) Append(buf []byte, v *Vars) []byte {
	for i, p := range t.parts {
		switch p.kind {
		case partLiteral:
			buf = append(buf, p.lit...)
		case partSeq:
			buf = strconv.AppendUint(buf, v.Seq, 10)
		case partRand:
			// Each placeholder position gets its own stream, so two {{rand}} differ.
			r := splitmix64(v.Seed ^ splitmix64(v.Draw<<8|uint64(i&0xff)))
			if p.n != 0 {
				r, _ = bits.Mul64(r, p.n)
			}
			buf = strconv.AppendUint(buf, r, 10)
		case partRun:
			buf = append(buf, v.Run...)
		case partArm:
			buf = append(buf, v.Arm...)
		case partSlice:
			buf = strconv.AppendInt(buf, int64(v.Slice), 10)
		}
	}
	return buf
}

// splitmix64 is a fast, well-mixed hash from a 64-bit counter to a 64-bit value.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// Uniform maps (seed, seq) to a float in [0, 1), for choosing a workload entry.
func Uniform(seed, seq uint64) float64 {
	return float64(splitmix64(seed^splitmix64(seq^0xa5a5a5a5a5a5a5a5))>>11) / (1 << 53)
}
