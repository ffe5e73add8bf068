//go:build slow

package main

import "crypto/sha256"

const variant = "slow"

// extraWork is the regression: a careless refactor that re-hashes the digest 6,000 more times,
// copying it into a fresh buffer each round (about 0.6 ms of CPU per request on a modern core).
func extraWork(sum [32]byte) [32]byte {
	for range 6000 {
		buf := make([]byte, 0, 64)
		buf = append(buf, sum[:]...)
		sum = sha256.Sum256(buf)
	}
	return sum
}
