package history

import (
	"fmt"
	"time"
)

// Clock is the time the history stamps entries with and measures ancestors' ages by.
type Clock func() time.Time

// ClockEnv names the variable that moves a host's history clock: a Go duration (720h) added to
// the wall clock. For tests, which must let 30 days pass without faking a measurement; a host
// in service leaves it unset (docs/design/0023-history.md).
const ClockEnv = "PERF_GATE_CLOCK_OFFSET"

// ClockFrom is the wall clock moved by offset, the value of ClockEnv ("" for none).
func ClockFrom(offset string) (Clock, error) {
	if offset == "" {
		return func() time.Time { return time.Now().UTC() }, nil
	}
	d, err := time.ParseDuration(offset)
	if err != nil {
		return nil, fmt.Errorf("%s: a Go duration such as 720h or -36h, got %q", ClockEnv, offset)
	}
	return func() time.Time { return time.Now().Add(d).UTC() }, nil
}
