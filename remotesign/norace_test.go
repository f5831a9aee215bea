//go:build !race

package remotesign

const raceEnabled = false
