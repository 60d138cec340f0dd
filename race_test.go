//go:build race

package main

// raceSlowdown widens the time bounds a test takes from an issue when the race
// detector is on: it makes code several times slower.
const raceSlowdown = 10
