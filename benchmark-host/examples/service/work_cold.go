//go:build cold

package main

import (
	"sync/atomic"
	"time"
)

const variant = "cold"

// coldRequests and coldWait make the build slow for its first seconds of serving, as a
// JIT-compiled or cache-warming service is: each of its first 3,000 requests waits up to 20 ms
// more, scaled down linearly to none, so it warms by the work it does, not by the clock. A
// champion that served earlier runs is warm and a new challenger cold; started the same way for
// every run, both are equally cold (the cold-start test of docs/design/0013-symmetric-starts.md).
const (
	coldRequests = 3000
	coldWait     = 20 * time.Millisecond
)

var served atomic.Int64

func extraWork(sum [32]byte) [32]byte {
	if n := served.Add(1); n < coldRequests {
		time.Sleep(coldWait * time.Duration(coldRequests-n) / coldRequests)
	}
	return sum
}
