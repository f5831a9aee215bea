//go:build race

package remotesign

const raceEnabled = true
