//go:build race

package sessionpolicy_test

// raceEnabled: the race detector slows partial evaluation tenfold; the
// property test then runs on fewer principals and tables.
const raceEnabled = true
