//go:build slow

package main

import (
	"os"
	"strconv"
)

const variant = "slow"

// slowExtraUs is the regression of the slow build: SLOW_EXTRA_US more delay per call.
func slowExtraUs() int {
	if v, err := strconv.Atoi(os.Getenv("SLOW_EXTRA_US")); err == nil {
		return v
	}
	return 2000
}
