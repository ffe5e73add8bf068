//go:build slow

package main

const variant = "slow"

// slowExtraUs is the regression of the slow build: SLOW_EXTRA_US more delay per call.
func slowExtraUs() int { return envInt("SLOW_EXTRA_US", 2000) }
