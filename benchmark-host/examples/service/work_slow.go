//go:build slow

package main

import "crypto/sha256"

const variant = "slow"

// extraWork is the regression: it copies the digest into a fresh buffer and hashes it again,
// a per-request allocation plus 100 more rounds that a careless refactor might add.
func extraWork(sum [32]byte) [32]byte {
	for range 100 {
		buf := make([]byte, 0, 64)
		buf = append(buf, sum[:]...)
		sum = sha256.Sum256(buf)
	}
	return sum
}
