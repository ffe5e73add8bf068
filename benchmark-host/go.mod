module github.com/perf-gate/perf-gate/benchmark-host

go 1.26.8

require (
	github.com/HdrHistogram/hdrhistogram-go v1.4.0
	golang.org/x/sys v0.48.0
)

require gonum.org/v1/gonum v0.17.0 // indirect
