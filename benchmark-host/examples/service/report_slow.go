//go:build slowreport

package main

// summarizeReport is a regression of /report alone: a refactor that folds the report's digest
// into a running FNV-1a checksum byte by byte, 15,000 rounds (about 1 ms of CPU per report on
// this project's VM), while /work is unchanged. A workload's single percentile dilutes it; the
// report's request classes and profiles name it (docs/design/0020-request-classes.md).
//
//go:noinline
func summarizeReport(sum [32]byte) [32]byte {
	acc := uint64(14695981039346656037)
	for range 15_000 {
		for _, b := range sum {
			acc = (acc ^ uint64(b)) * 1099511628211
		}
		sum[acc%32] ^= byte(acc >> 56)
	}
	return sum
}
