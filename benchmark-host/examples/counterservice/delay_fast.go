//go:build !slow

package main

const variant = "fast"

func slowExtraUs() int { return 0 }
