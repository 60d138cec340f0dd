//go:build race

package main

// raceSlowdown widens how long a test waits for a condition before it fails on it,
// when the race detector is on: it makes code several times slower.
const raceSlowdown = 10
