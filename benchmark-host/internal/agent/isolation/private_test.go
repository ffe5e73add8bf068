package isolation

import (
	"strings"
	"testing"
)

// The line says which the arms have; a kernel without scopes gets a note that says what to do.
func TestTheLineSaysWhetherAbstractSocketsAreScoped(t *testing.T) {
	for _, c := range []struct {
		abi        int
		line, note string
	}{
		{0, "abstract unix sockets shared with the host and the other arm", "ABI 0; Linux 6.12 brings ABI 6; if it is built but off, add landlock to the lsm= boot parameter"},
		{5, "shared with the host and the other arm", "no scopes (ABI 5;"},
		{6, "each program reaches only its own and its children's (Landlock ABI 6 scope)", ""},
		{7, "(Landlock ABI 7 scope)", ""},
	} {
		line, note := abstractSockets(c.abi)
		if !strings.Contains(line, c.line) || (c.note == "") != (note == "") || !strings.Contains(note, c.note) {
			t.Errorf("ABI %d: %q, note %q", c.abi, line, note)
		}
	}
}
