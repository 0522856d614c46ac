package workshops

import "time"

// The board's stuck rule: a learner is stuck after StuckAttempts failed
// checks on the step they are on, or StuckMinutes on it.
const (
	StuckAttempts = 3
	StuckMinutes  = 10
)

// Why a learner is stuck.
const (
	ByFails   = "fails"   // that many failed checks of the step
	ByMinutes = "minutes" // that many minutes on the step
)

// Stuck says whether a learner on a step since since, with failed checks
// of it, is stuck at now, and why ("" when not) with its count: failed
// checks first, then minutes.
func Stuck(failed int, since, now time.Time) (why string, n int) {
	switch {
	case failed >= StuckAttempts:
		return ByFails, failed
	case now.Sub(since) >= StuckMinutes*time.Minute:
		return ByMinutes, int(now.Sub(since).Minutes())
	}
	return "", 0
}
