package session

import (
	"testing"
	"time"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

func TestStepBegan(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	sess := &store.LabSession{CreatedAt: t0}
	lab := &labs.Lab{Steps: []labs.Step{{ID: "a"}, {ID: "b"}, {ID: "c"}}}
	statuses := map[string]store.StepStatus{
		"a": {StepID: "a", Status: store.StepPassed, UpdatedAt: t0.Add(time.Minute)},
		"b": {StepID: "b", Status: store.StepFailed, UpdatedAt: t0.Add(2 * time.Minute)},
		"c": {StepID: "c", Status: store.StepPassed, UpdatedAt: t0.Add(3 * time.Minute)},
	}
	for step, want := range map[string]time.Time{
		"a": t0,                  // the first step began with the session
		"b": t0.Add(time.Minute), // when a was passed
		"c": t0.Add(time.Minute), // b failed: c began when a was passed
	} {
		if got := stepBegan(sess, lab, step, statuses); !got.Equal(want) {
			t.Errorf("step %s began %s, want %s", step, got, want)
		}
	}
	statuses["b"] = store.StepStatus{Status: store.StepSkipped, UpdatedAt: t0.Add(2 * time.Minute)}
	if got := stepBegan(sess, lab, "c", statuses); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("after b was skipped, c began %s", got)
	}
}
