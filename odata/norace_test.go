//go:build !race

package odata

const raceEnabled = false

const raceSlowdown = 1
