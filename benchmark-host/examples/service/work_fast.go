//go:build !slow && !cold

package main

const variant = "fast"

func extraWork(sum [32]byte) [32]byte { return sum }
