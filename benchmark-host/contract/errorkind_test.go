package contract

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every kind a failure of either arm can be named is in the schema's enum, and each arm's
// failures name their arm.
func TestEveryArmFailureIsAnErrorKindOfItsArm(t *testing.T) {
	for _, f := range []ArmFailure{ArmUnhealthy, ArmCrashed, ArmOutOfMemory, ArmOutOfDisk, ArmNotStopped} {
		for _, arm := range Arms {
			kind := string(f.Of(arm))
			if ErrorKinds.Check(kind) != nil {
				t.Errorf("%s of the %s is not in ErrorKinds", kind, arm)
			}
			if !strings.HasPrefix(kind, arm+"_") {
				t.Errorf("%s: a failure of the %s must name it", kind, arm)
			}
		}
	}
}

// ErrorKinds is every ErrorKind constant declared, once each: a kind left out of it would be
// sent by the host and refused by the action's reader, whose enum is the schema's.
func TestErrorKindsListsEveryErrorKindConstant(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "errorkind.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	ast.Inspect(f, func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok {
			if id, ok := v.Type.(*ast.Ident); ok && id.Name == "ErrorKind" {
				for _, lit := range v.Values {
					s, _ := strconv.Unquote(lit.(*ast.BasicLit).Value)
					declared = append(declared, s)
				}
			}
		}
		return true
	})
	listed := slices.Clone(ErrorKinds)
	slices.Sort(declared)
	slices.Sort(listed)
	if len(declared) < 10 || !slices.Equal(declared, listed) {
		t.Errorf("ErrorKind constants %v, ErrorKinds %v", declared, listed)
	}
}
