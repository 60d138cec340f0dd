//go:build !race

package main

const raceEnabled = false

const raceSlowdown = 1
