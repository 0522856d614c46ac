package workshops

import (
	"testing"
	"time"
)

func TestStuck(t *testing.T) {
	now := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		failed int
		since  time.Duration // before now
		why    string
		n      int
	}{
		{0, 0, "", 0},
		{2, 9*time.Minute + 59*time.Second, "", 0},
		{3, time.Minute, ByFails, 3},
		{5, 30 * time.Minute, ByFails, 5}, // failed checks say more than time
		{0, 10 * time.Minute, ByMinutes, 10},
		{1, 25*time.Minute + 40*time.Second, ByMinutes, 25},
	}
	for _, c := range cases {
		why, n := Stuck(c.failed, now.Add(-c.since), now)
		if why != c.why || n != c.n {
			t.Errorf("%d failed, on the step for %s: stuck %q %d, want %q %d", c.failed, c.since, why, n, c.why, c.n)
		}
	}
}
