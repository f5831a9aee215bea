//go:build !race

package sessionpolicy_test

const raceEnabled = false
