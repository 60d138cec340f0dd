//go:build race

package graphql

// raceSlowdown widens the time bounds some tests state: the race detector
// makes code several times slower.
const raceSlowdown = 10
