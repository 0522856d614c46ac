package store_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/store"
)

// A lab is completed by a session whose every step (of those the caller
// names) is passed or skipped, at the first such session's last step; it is
// started by an active session or an attempt. Another user's sessions count
// for nothing.
func TestCompletedAndStartedLabs(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	u, _ := st.CreateUser(ctx, "lin@example.com", "Lin", "h", store.RoleLearner)
	other, _ := st.CreateUser(ctx, "max@example.com", "Max", "h", store.RoleLearner)
	steps := map[string][]string{"a": {"one", "two"}, "b": {"one"}, "c": {"one"}, "none": nil}
	n := 0
	session := func(userID int64, lab string) uuid.UUID {
		t.Helper()
		n++
		id := uuid.New()
		if _, err := st.CreateLabSession(ctx, store.NewLabSession{ID: id, UserID: userID, LabID: lab, Lifetime: time.Hour, IdleTimeout: time.Minute,
			SandboxName: "ls-p" + string(rune('a'+n)), Image: "img", Workers: 1}); err != nil {
			t.Fatal(err)
		}
		return id
	}
	attempt := func(sess uuid.UUID, step, kind string, passed bool) {
		t.Helper()
		if err := st.RecordAttempt(ctx, &store.Attempt{LabSessionID: sess, StepID: step, Kind: kind, Passed: passed}); err != nil {
			t.Fatal(err)
		}
	}
	check := func(wantDone []string, wantStarted []string) map[string]time.Time {
		t.Helper()
		done, err := st.CompletedLabs(ctx, u.ID, steps)
		if err != nil {
			t.Fatal(err)
		}
		started, err := st.StartedLabs(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, l := range wantDone {
			want[l] = true
		}
		got := map[string]bool{}
		for l := range done {
			got[l] = true
		}
		if !maps.Equal(got, want) {
			t.Errorf("completed %v, want %v", done, wantDone)
		}
		want = map[string]bool{}
		for _, l := range wantStarted {
			want[l] = true
		}
		if !maps.Equal(started, want) {
			t.Errorf("started %v, want %v", started, wantStarted)
		}
		return done
	}
	check(nil, nil)

	a1 := session(u.ID, "a")
	check(nil, []string{"a"}) // active
	attempt(a1, "one", store.AttemptCheck, true)
	attempt(a1, "two", store.AttemptCheck, false)
	check(nil, []string{"a"}) // a failed step is not done
	if err := st.EndLabSession(ctx, a1, "ended by the learner"); err != nil {
		t.Fatal(err)
	}
	check(nil, []string{"a"}) // ended, but with attempts

	b1 := session(u.ID, "b")
	st.EndLabSession(ctx, b1, "ended by the learner")
	check(nil, []string{"a"}) // an ended session with no attempt is nothing

	a2 := session(u.ID, "a")
	attempt(a2, "one", store.AttemptCheck, true)
	attempt(a2, "two", store.AttemptSkip, true)
	attempt(a2, "extra", store.AttemptCheck, false) // a step the lab no longer has
	first := check([]string{"a"}, []string{"a"})["a"]
	st.EndLabSession(ctx, a2, "done")

	// A later completion keeps the first time.
	a3 := session(u.ID, "a")
	attempt(a3, "one", store.AttemptCheck, true)
	attempt(a3, "two", store.AttemptCheck, true)
	if again := check([]string{"a"}, []string{"a"})["a"]; !again.Equal(first) {
		t.Errorf("completed at %v, then %v: want the first", first, again)
	}
	st.EndLabSession(ctx, a3, "done")

	// Another user's completion is theirs.
	o := session(other.ID, "c")
	attempt(o, "one", store.AttemptCheck, true)
	check([]string{"a"}, []string{"a"})
}
