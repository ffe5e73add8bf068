// Package grammar parses the command a CI key sends over SSH. The key's authorized_keys entry
// forces `perf-host ssh`, which reads SSH_ORIGINAL_COMMAND and accepts only what this grammar
// allows; the string never reaches a shell.
package grammar

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/perf-gate/perf-gate/benchmark-host/contract"
)

// MaxLength bounds the whole command.
const MaxLength = 200

// pullRequest is a pull request's number as a command gives it.
var pullRequest = regexp.MustCompile(`^[1-9][0-9]{0,8}$`)

// Command is a parsed, validated request.
type Command struct {
	Verb  string
	Role  string // deploy and profile: champion or challenger
	SHA   string
	RunID string
	// promote: the pull request merged, whose last gate is the step main takes; 0 when not given.
	PullRequest int
}

// argKind is what a verb's positional argument must be.
type argKind int

const (
	argRole argKind = iota
	argSHA
	argRunID
	argPullRequest
)

// verb is what a verb takes: its arguments, in order, of which the last `optional` may be left out.
type verb struct {
	args     []argKind
	optional int
}

// verbs lists every verb the CI key may run and its arguments.
var verbs = map[string]verb{
	"deploy":       {args: []argKind{argRole, argSHA}},
	"run":          {args: []argKind{argRunID}},
	"aa":           {args: []argKind{argRunID}},
	"wait":         {args: []argKind{argRunID}},
	"result":       {args: []argKind{argRunID}},
	"abort":        {args: []argKind{argRunID}},
	"promote":      {args: []argKind{argSHA, argPullRequest}, optional: 1},
	"rollback":     {},
	"status":       {},
	"gc":           {},
	"floor-record": {args: []argKind{argRunID}},
	"floors":       {},
	"runs":         {args: []argKind{argSHA}},
	"gate-record":  {args: []argKind{argRunID}},
	"drift-record": {args: []argKind{argRunID}},
	"history":      {},
	// An arm's CPU profile of a run (pprof, gzipped), written beside the result when the run
	// request asked for profiles; only a role names the file, never a path.
	"profile": {args: []argKind{argRunID, argRole}},
}

// Verbs returns the accepted verbs, for help texts.
func Verbs() []string {
	out := make([]string, 0, len(verbs))
	for v := range verbs {
		out = append(out, v)
	}
	return out
}

// Parse validates raw against the grammar: printable lowercase words separated by single
// spaces, a known verb, and arguments of the verb's kinds.
func Parse(raw string) (Command, error) {
	var c Command
	if raw == "" {
		return c, fmt.Errorf("no command given (an interactive login is not allowed for this key)")
	}
	if len(raw) > MaxLength {
		return c, fmt.Errorf("command is %d bytes, longer than the %d allowed", len(raw), MaxLength)
	}
	if strings.Contains(raw, "..") {
		return c, fmt.Errorf("'..' is not allowed in a command")
	}
	for i, r := range raw {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == ' ') {
			return c, fmt.Errorf("character %q at offset %d is not allowed (only a-z, 0-9, '-' and single spaces)", r, i)
		}
	}
	words := strings.Split(raw, " ")
	for _, w := range words {
		if w == "" {
			return c, fmt.Errorf("words must be separated by single spaces")
		}
	}
	v, ok := verbs[words[0]]
	if !ok {
		return c, fmt.Errorf("unknown verb %q", words[0])
	}
	c.Verb = words[0]
	args := words[1:]
	if least := len(v.args) - v.optional; len(args) < least || len(args) > len(v.args) {
		if v.optional == 0 {
			return c, fmt.Errorf("%s takes %d argument(s), got %d", c.Verb, len(v.args), len(args))
		}
		return c, fmt.Errorf("%s takes %d to %d arguments, got %d", c.Verb, least, len(v.args), len(args))
	}
	for i, k := range v.args[:len(args)] {
		if err := c.set(k, args[i]); err != nil {
			return c, err
		}
	}
	return c, nil
}

// set checks one argument of the command's verb against its kind and keeps it.
func (c *Command) set(k argKind, a string) error {
	switch k {
	case argRole:
		if a != "champion" && a != "challenger" {
			return fmt.Errorf("%s: role must be champion or challenger, got %q", c.Verb, a)
		}
		c.Role = a
	case argSHA:
		if !contract.SHA.MatchString(a) {
			return fmt.Errorf("%s: sha must be 7 to 40 lowercase hex characters, got %q", c.Verb, a)
		}
		c.SHA = a
	case argRunID:
		if !contract.RunID.MatchString(a) {
			return fmt.Errorf("%s: run-id must match %s, got %q", c.Verb, contract.RunID.Expr, a)
		}
		c.RunID = a
	case argPullRequest:
		if !pullRequest.MatchString(a) {
			return fmt.Errorf("%s: pull request must be its number (1 to 999999999, no leading 0), got %q", c.Verb, a)
		}
		c.PullRequest, _ = strconv.Atoi(a)
	}
	return nil
}

// ValidRunID reports whether s is a well-formed run-id.
func ValidRunID(s string) bool { return contract.RunID.MatchString(s) }

// ValidSHA reports whether s is a well-formed sha.
func ValidSHA(s string) bool { return contract.SHA.MatchString(s) }
