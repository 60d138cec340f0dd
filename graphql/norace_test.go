//go:build !race

package graphql

const raceEnabled = false

const raceSlowdown = 1
