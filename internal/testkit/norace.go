//go:build !race

package testkit

// RaceSlowdown is 1 without the race detector; see race.go.
const RaceSlowdown = 1
