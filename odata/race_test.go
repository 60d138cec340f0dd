//go:build race

package odata

// raceEnabled is set when the race detector is on: it makes code several times
// slower, so a test that states a time bound from an issue widens it by raceSlowdown.
const raceEnabled = true

const raceSlowdown = 10
