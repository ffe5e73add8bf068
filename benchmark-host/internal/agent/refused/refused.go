// Package refused is the error of a request the host will not carry out as sent (a bad plan,
// a hostile tarball, a bad floor): the caller must change the request, not retry it.
// perf-host exits with contract.ExitRefused on it.
package refused

import "fmt"

// Error is a refused request and why.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf refuses with a formatted reason (%w wraps as fmt.Errorf does).
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}
