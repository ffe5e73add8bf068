//go:build !slowreport

package main

// summarizeReport finishes a report's digest: nothing more than /work does, in every build but
// slowreport.
func summarizeReport(sum [32]byte) [32]byte { return sum }
