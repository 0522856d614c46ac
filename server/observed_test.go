package server_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// englishNote is any of the grader's English notes, or a word of its
// English wording: none may reach a Chinese page.
var englishNote = regexp.MustCompile(`\((matches|does not|not a|still|not waited|it did not|the cluster|empty\))|cannot compare|nothing|which|your answer|printed|exit code|of allOf|of anyOf`)

// A check's observed value reaches the learner in the page's language:
// the lab's reading in Chinese for ?lang=zh, podpath's own words in
// Chinese for what the grader says (a probe that could not read, a check
// not waited for), and no English note. In the check's answer, the step's
// last attempt, the session's events and the instructor's board alike.
// The raw value stays in the store. No cluster: the sandbox is a fake,
// whose commands all exit 0 and print nothing.
func TestObservedInTheLearnersLanguage(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	now := time.Now()
	grace := e.instructor(t, "grace@example.com")
	w := grace.createWorkshop(t, workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 3, true))
	ada := newClient(t, e.url)
	r, j := ada.join(w.Code, "Ada")
	if r.status != 200 || j.Session == nil {
		t.Fatalf("join: %d %s", r.status, r.body)
	}
	waitReady(t, ada, j.Session.ID)

	all, _ := labs.Builtin()
	stop := labs.Find(all, "yaml-to-process").Step("stop-scheduler")
	// The fake's test -e exits 0: the manifest is still there.
	want := map[string]string{}
	for _, lang := range []string{"en", "zh"} {
		s, ok := labs.Say(stop.Checks[0].Observed, "0", lang)
		if !ok || s == "" || s == "0" {
			t.Fatalf("stop-scheduler's first check has no %s reading of exit code 0: %q", lang, s)
		}
		want[lang] = s
	}

	events := make(chan [2]string, 64)
	go ada.sseAsync(t, "/api/sessions/"+j.Session.ID+"/events?lang=zh", events)
	waitEvent(t, events, "session", "", 5*time.Second)

	var zh, en attemptView
	ada.do("POST", "/api/sessions/"+j.Session.ID+"/steps/stop-scheduler/check?lang=zh", map[string]string{}).json(t, &zh)
	if zh.Passed || len(zh.Results) != 2 {
		t.Fatalf("check: %+v", zh)
	}
	if got := zh.Results[0].Observed; got != want["zh"] {
		t.Errorf("observed in Chinese: %q, want the lab's reading %q", got, want["zh"])
	}
	// The crictl probe read no JSON from the fake, and was not waited for.
	if got := zh.Results[1].Observed; !strings.Contains(got, "什么也没有输出") || !strings.Contains(got, "没有再等") {
		t.Errorf("the grader's own words in Chinese: %q", got)
	}
	for i, res := range zh.Results {
		if englishNote.MatchString(res.Observed) {
			t.Errorf("result %d shows an English note on a Chinese page: %q", i, res.Observed)
		}
	}
	var ev attemptView
	if err := json.Unmarshal([]byte(waitEvent(t, events, "attempt", want["zh"], 5*time.Second)), &ev); err != nil || len(ev.Results) != 2 {
		t.Fatalf("attempt event: %+v %v", ev, err)
	}
	if ev.Results[0].Observed != want["zh"] || englishNote.MatchString(ev.Results[1].Observed) {
		t.Errorf("the attempt event in Chinese: %+v", ev.Results)
	}

	ada.do("POST", "/api/sessions/"+j.Session.ID+"/steps/stop-scheduler/check?lang=en", map[string]string{}).json(t, &en)
	if len(en.Results) != 2 || en.Results[0].Observed != want["en"] || !strings.Contains(en.Results[1].Observed, "printed nothing") {
		t.Errorf("observed in English: %+v", en.Results)
	}

	var step struct {
		LastAttempt *attemptView
	}
	ada.do("GET", "/api/sessions/"+j.Session.ID+"/steps/stop-scheduler?lang=zh", nil).json(t, &step)
	if step.LastAttempt == nil || step.LastAttempt.Results[0].Observed != want["zh"] {
		t.Errorf("the step's last attempt in Chinese: %+v", step.LastAttempt)
	}

	// The board's cell of the failed step, for an instructor reading Chinese.
	var board struct {
		Learners []struct {
			Cells map[string]struct{ Status, Check, Observed string }
		}
	}
	grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/board?lang=zh", nil).json(t, &board)
	if len(board.Learners) != 1 {
		t.Fatalf("board: %+v", board)
	}
	cell := board.Learners[0].Cells["yaml-to-process/stop-scheduler"]
	if cell.Status != "failed" || cell.Observed != want["zh"] || cell.Check != stop.Checks[0].Name["zh"] {
		t.Errorf("the board's cell in Chinese: %+v", cell)
	}
	grace.do("GET", "/api/workshops/"+itoa(w.ID)+"/board?lang=en", nil).json(t, &board)
	if got := board.Learners[0].Cells["yaml-to-process/stop-scheduler"].Observed; got != want["en"] {
		t.Errorf("the board's cell in English: %q", got)
	}

	// The store keeps the raw value and the words of every language.
	a, err := e.store.LastAttempt(context.Background(), mustUUID(t, j.Session.ID), "stop-scheduler")
	if err != nil {
		t.Fatal(err)
	}
	var words map[string]string
	_ = json.Unmarshal(a.Results[0].ObservedWords, &words)
	if a.Results[0].Observed != "0" || words["en"] != want["en"] || words["zh"] != want["zh"] {
		t.Errorf("stored: observed %q, words %s", a.Results[0].Observed, a.Results[0].ObservedWords)
	}
	if !strings.HasPrefix(a.Results[1].Observed, "crictl ps --name kube-scheduler --state running -o json printed no JSON") {
		t.Errorf("stored raw of the probe that could not read: %q", a.Results[1].Observed)
	}
}

// A result recorded before there were words shows its raw value.
func TestObservedBeforeWords(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	ada := newClient(t, e.url)
	ada.signup("ada@example.com")
	r := ada.do("POST", "/api/labs/yaml-to-process/sessions", nil)
	var sess struct{ ID string }
	r.json(t, &sess)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	name, _ := json.Marshal(labs.Text{"en": "old"})
	old := &store.Attempt{LabSessionID: mustUUID(t, sess.ID), StepID: "apply", Kind: store.AttemptCheck, Duration: time.Second,
		Results: []store.CheckResult{{Name: name, Observed: "Pending/;"}}}
	if err := e.store.RecordAttempt(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	var step struct{ LastAttempt *attemptView }
	ada.do("GET", "/api/sessions/"+sess.ID+"/steps/apply?lang=zh", nil).json(t, &step)
	if step.LastAttempt == nil || step.LastAttempt.Results[0].Observed != "Pending/;" {
		t.Errorf("an old result: %+v", step.LastAttempt)
	}
}
