//go:build race

package testkit

// RaceSlowdown widens how long a test waits for a condition before it fails on it,
// when the race detector is on: it makes code several times slower.
const RaceSlowdown = 10
