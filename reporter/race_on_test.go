//go:build race

package reporter_test

const raceEnabled = true
