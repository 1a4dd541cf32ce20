//go:build !race

package reporter_test

const raceEnabled = false
