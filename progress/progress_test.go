package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

func lab(id string, order int, steps ...string) *labs.Lab {
	l := &labs.Lab{ID: id, Order: order}
	for _, s := range steps {
		l.Steps = append(l.Steps, labs.Step{ID: s})
	}
	return l
}

var t0 = time.Date(2025, 3, 1, 9, 0, 0, 0, time.UTC)

func at(min int) time.Time { return t0.Add(time.Duration(min) * time.Minute) }

func ptr(t time.Time) *time.Time { return &t }

func passed(min int) Step  { return Step{Status: store.StepPassed, UpdatedAt: at(min), Attempts: 1} }
func skipped(min int) Step { return Step{Status: store.StepSkipped, UpdatedAt: at(min), Attempts: 1} }
func failed(min int) Step {
	return Step{Status: store.StepFailed, UpdatedAt: at(min), Attempts: 1, Failed: 1}
}

func stepIDs(steps []*labs.Step) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.ID)
	}
	return strings.Join(out, ",")
}

func TestCurrentBeganFinished(t *testing.T) {
	l := lab("one", 1, "a", "b", "c")
	for _, tc := range []struct {
		name     string
		steps    Steps
		current  string         // "" once all are done
		began    map[string]int // step → minute it began
		finished int            // -1: not finished
	}{
		{"untouched", Steps{}, "a", map[string]int{"a": 0, "b": 0, "c": 0}, -1},
		{"a failed", Steps{"a": failed(3)}, "a", map[string]int{"a": 0, "b": 0}, -1},
		{"a passed", Steps{"a": passed(4)}, "b", map[string]int{"a": 0, "b": 4, "c": 4}, -1},
		{"a pending status word", Steps{"a": {Status: store.StepPending}}, "a", map[string]int{"b": 0}, -1},
		// A step ahead checked first: the learner is still on b, and c
		// began when a was done (b is not done).
		{"c passed before b", Steps{"a": passed(4), "c": passed(9)}, "b", map[string]int{"b": 4, "c": 4}, -1},
		// A check of a passed step that fails undoes it: the lab page and
		// the board show the learner back on it.
		{"a passed then failed", Steps{"a": failed(6), "b": passed(5)}, "a", map[string]int{"b": 0, "c": 5}, -1},
		// The latest done step before it counts, not the one just before.
		{"a re-passed late", Steps{"a": passed(12), "b": skipped(7)}, "c", map[string]int{"c": 12}, -1},
		{"all done", Steps{"a": passed(2), "b": skipped(31), "c": passed(12)}, "", map[string]int{"c": 31}, 31},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur := ""
			if c := Current(l, tc.steps); c != nil {
				cur = c.ID
			}
			if cur != tc.current {
				t.Errorf("current %q, want %q", cur, tc.current)
			}
			for step, min := range tc.began {
				if got := Began(l, step, tc.steps, t0); !got.Equal(at(min)) {
					t.Errorf("%s began %s, want minute %d", step, got, min)
				}
			}
			fin, ok := Finished(l, tc.steps)
			if ok != (tc.finished >= 0) || (ok && !fin.Equal(at(tc.finished))) {
				t.Errorf("finished %s %v, want minute %d", fin, ok, tc.finished)
			}
		})
	}
	// A lab without steps is never finished (and has no current step).
	if _, ok := Finished(lab("empty", 1), Steps{}); ok {
		t.Error("a lab without steps finished")
	}
	if Summarize(lab("empty", 1), Steps{}, t0) != nil {
		t.Error("a lab without steps has a summary")
	}
}

// The end of a lab: nothing while a step is to do or failed; then the steps
// passed and skipped in the lab's order, the time from the start to the
// last step's last attempt, and the attempts.
func TestSummarize(t *testing.T) {
	l := lab("one", 1, "a", "b", "c", "d")
	s := Steps{"a": passed(5), "b": skipped(31), "c": passed(12)}
	if sum := Summarize(l, s, t0); sum != nil {
		t.Fatalf("a summary with d to do: %+v", sum)
	}
	s["d"] = failed(20)
	if sum := Summarize(l, s, t0); sum != nil {
		t.Fatalf("a summary with d failed: %+v", sum)
	}
	s["d"] = Step{Status: store.StepSkipped, UpdatedAt: at(24), Attempts: 3}
	sum := Summarize(l, s, t0)
	if sum == nil {
		t.Fatal("no summary once every step is done")
	}
	if stepIDs(sum.Passed) != "a,c" || stepIDs(sum.Skipped) != "b,d" {
		t.Errorf("passed %s, skipped %s", stepIDs(sum.Passed), stepIDs(sum.Skipped))
	}
	// b's attempt, at minute 31, was the last, though b comes before d.
	if !sum.FinishedAt.Equal(at(31)) || sum.Duration != 31*time.Minute || sum.Attempts != 6 {
		t.Errorf("finished %s after %s, %d attempts", sum.FinishedAt, sum.Duration, sum.Attempts)
	}
	// A clock that went back gives no negative duration.
	if sum := Summarize(l, s, at(40)); sum == nil || sum.Duration != 0 {
		t.Errorf("started after the end: %+v", sum)
	}
}

func TestNext(t *testing.T) {
	one := lab("one", 1, "a")
	catalog := []*labs.Lab{lab("later", 7), one, lab("same-order", 1), lab("two-b", 2), lab("two-a", 2)}
	for _, tc := range []struct {
		l    *labs.Lab
		want string
	}{{one, "two-a"}, {catalog[3], "later"}, {catalog[0], ""}} {
		got := ""
		if n := Next(tc.l, catalog); n != nil {
			got = n.ID
		}
		if got != tc.want {
			t.Errorf("after %s comes %q, want %q", tc.l.ID, got, tc.want)
		}
	}
}

func TestFromSources(t *testing.T) {
	statuses := FromStatuses(map[string]store.StepStatus{
		"a": {StepID: "a", Status: store.StepFailed, Attempts: 3, UpdatedAt: at(4)},
	})
	if st := statuses["a"]; Done(st) || st.Attempts != 3 || !st.UpdatedAt.Equal(at(4)) || st.PassedAt != nil {
		t.Errorf("from statuses: %+v", st)
	}
	stats := FromStats(map[string]*store.StepStat{
		"a": {StepID: "a", Status: store.StepPassed, Attempts: 2, Failed: 1, Hints: 1, UpdatedAt: at(9), PassedAt: ptr(at(8))},
		"b": nil,
	})
	if st := stats["a"]; !Done(st) || st.Failed != 1 || st.Hints != 1 || !st.UpdatedAt.Equal(at(9)) || !st.PassedAt.Equal(at(8)) {
		t.Errorf("from stats: %+v", st)
	}
	if _, ok := stats["b"]; ok {
		t.Error("a nil stat became a step")
	}
	// A record counts the first pass, whatever came after, and a skip
	// only when the first pass was one.
	rec := FromRecord(&store.LabRecord{Steps: map[string]store.StepRecord{
		"a": {Attempts: 4, PassedAt: ptr(at(3))},
		"b": {Attempts: 1, PassedAt: ptr(at(5)), Skipped: true},
		"c": {Attempts: 2},
	}})
	if st := rec["a"]; st.Status != store.StepPassed || !st.UpdatedAt.Equal(at(3)) || st.Attempts != 4 {
		t.Errorf("record a: %+v", st)
	}
	if st := rec["b"]; st.Status != store.StepSkipped || !st.UpdatedAt.Equal(at(5)) {
		t.Errorf("record b: %+v", st)
	}
	if st := rec["c"]; Done(st) || st.Attempts != 2 {
		t.Errorf("record c: %+v", st)
	}
}

func record(user int64, labID string, startMin int, active bool, steps map[string]store.StepRecord) *store.LabRecord {
	if steps == nil {
		steps = map[string]store.StepRecord{}
	}
	return &store.LabRecord{UserID: user, LabID: labID, SessionID: uuid.New(), Active: active, StartedAt: at(startMin), Steps: steps}
}

func TestLabsAssignmentHistory(t *testing.T) {
	one, two := lab("one", 1, "a", "b"), lab("two", 2, "x")
	find := func(id string) *labs.Lab { return labs.Find([]*labs.Lab{one, two}, id) }
	recs := []*store.LabRecord{
		// An ended session without a check is no start.
		record(1, "two", 0, false, nil),
		// The first session of one: a passed, b skipped → completed at 20.
		record(1, "one", 10, false, map[string]store.StepRecord{
			"a": {Attempts: 2, PassedAt: ptr(at(12))}, "b": {Attempts: 1, PassedAt: ptr(at(20)), Skipped: true}}),
		// A later session of one does not undo the first completion.
		record(1, "one", 30, true, map[string]store.StepRecord{"a": {Attempts: 1}}),
		// A lab no longer offered is left out.
		record(1, "gone", 40, true, nil),
		// Another user on one, in progress on b.
		record(2, "one", 5, true, map[string]store.StepRecord{"a": {Attempts: 1, PassedAt: ptr(at(6))}, "b": {Attempts: 2}}),
	}
	all := Labs(recs, map[int64]map[string]int{1: {"one": 4}, 2: {"one": 3}}, find)
	if _, ok := all[1]["two"]; ok {
		t.Error("an untouched ended session started lab two")
	}
	if _, ok := all[1]["gone"]; ok {
		t.Error("a lab no longer offered has progress")
	}
	p := all[1]["one"]
	if p == nil || p.Status != Completed || !p.CompletedAt.Equal(at(20)) || p.TimeSpent != 10*time.Minute ||
		!p.StartedAt.Equal(at(10)) || p.Skips != 1 || p.Attempts != 4 || p.CurrentStep != "" {
		t.Fatalf("user 1 on one: %+v", p)
	}
	q := all[2]["one"]
	if q == nil || q.Status != InProgress || q.CurrentStep != "b" || q.CompletedAt != nil || q.Attempts != 3 || q.Skips != 0 {
		t.Fatalf("user 2 on one: %+v", q)
	}

	due := at(100)
	for _, tc := range []struct {
		name   string
		labIDs []string
		byLab  map[string]*Lab
		now    time.Time
		status string
		over   bool
		done   int
		next   string
	}{
		{"all done", []string{"one"}, all[1], at(200), Completed, false, 1, ""},
		{"one of two, late", []string{"one", "two"}, all[1], at(200), InProgress, true, 1, "two"},
		{"one of two, in time", []string{"one", "two"}, all[1], at(50), InProgress, false, 1, "two"},
		{"in progress", []string{"one"}, all[2], at(200), InProgress, true, 0, "one"},
		{"not started", []string{"two"}, all[2], at(200), NotStarted, true, 0, "two"},
		{"nothing to do", nil, all[1], at(200), NotStarted, false, 0, ""},
	} {
		a := OfAssignment(tc.labIDs, due, tc.now, tc.byLab)
		if a.Status != tc.status || a.Overdue != tc.over || a.LabsDone != tc.done || a.NextLab != tc.next || a.LabsTotal != len(tc.labIDs) || len(a.Labs) != len(tc.labIDs) {
			t.Errorf("%s: %+v", tc.name, a)
		}
	}
	a := OfAssignment([]string{"one", "two"}, due, at(50), all[1])
	if a.Attempts != 4 || a.Skips != 1 || a.TimeSpent != 10*time.Minute || a.Labs[1].Status != NotStarted || a.Labs[1].ID != "two" {
		t.Errorf("sums and the lab not started: %+v %+v", a, a.Labs[1])
	}
	if a := OfAssignment([]string{"one"}, due, at(200), all[1]); !a.CompletedAt.Equal(at(20)) {
		t.Errorf("completed at %v", a.CompletedAt)
	}

	h := History(recs[:4], find)
	if len(h) != 4 || h[0].Lab != "gone" || h[3].Lab != "two" {
		t.Fatalf("history not newest first: %+v", h)
	}
	if e := h[0]; e.Steps != 0 || e.Completed || !e.Active {
		t.Errorf("a lab no longer offered: %+v", e)
	}
	if e := h[1]; e.Steps != 2 || e.StepsDone != 0 || e.Attempts != 1 || e.Completed {
		t.Errorf("the second session of one: %+v", e)
	}
	if e := h[2]; e.Steps != 2 || e.StepsDone != 2 || e.Attempts != 3 || e.Skips != 1 || !e.Completed || e.Session != recs[1].SessionID {
		t.Errorf("the first session of one: %+v", e)
	}
}

// What grading's history probes go by (issue 9), from the statuses a
// session has now; moved from session's stepBegan.
func TestBeganFromStatuses(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	l := lab("l", 1, "a", "b", "c")
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
		if got := Began(l, step, FromStatuses(statuses), t0); !got.Equal(want) {
			t.Errorf("step %s began %s, want %s", step, got, want)
		}
	}
	statuses["b"] = store.StepStatus{Status: store.StepSkipped, UpdatedAt: t0.Add(2 * time.Minute)}
	if got := Began(l, "c", FromStatuses(statuses), t0); !got.Equal(t0.Add(2 * time.Minute)) {
		t.Errorf("after b was skipped, c began %s", got)
	}
}
