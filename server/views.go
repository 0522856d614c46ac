package server

import (
	"encoding/json"
	"time"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// The API's JSON comes from these view types, never from store or sandbox
// structs, so a column or field added there does not leak into the API.
// Durations are in milliseconds.

// UserView is an account.
type UserView struct {
	ID        int64     `json:"id"`
	Email     string    `json:"email"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	CreatedAt time.Time `json:"createdAt"`
	// GuestWorkshop is the workshop a guest joined (guests have no
	// password and reach that workshop's labs only).
	GuestWorkshop int64 `json:"guestWorkshop,omitempty"`
}

func userView(u *store.User) *UserView {
	if u == nil {
		return nil
	}
	return &UserView{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, CreatedAt: u.CreatedAt, GuestWorkshop: u.GuestWorkshop}
}

// AttemptView is one press of Check (or Skip) with each check's result.
type AttemptView struct {
	ID         int64             `json:"id"`
	StepID     string            `json:"stepId"`
	Kind       string            `json:"kind"`
	Passed     bool              `json:"passed"`
	Answer     *string           `json:"answer,omitempty"`
	Error      *string           `json:"error,omitempty"`
	DurationMS int64             `json:"durationMs"`
	CreatedAt  time.Time         `json:"createdAt"`
	Results    []CheckResultView `json:"results"`
}

// CheckResultView is one check's outcome: its name and feedback by
// language, and what it observed in the words of the request's language.
type CheckResultView struct {
	Index  int               `json:"index"`
	Name   map[string]string `json:"name"`
	Passed bool              `json:"passed"`
	// Observed is what the check observed, as the learner reads it in the
	// request's language (the raw value stays in the store).
	Observed   string            `json:"observed"`
	Feedback   map[string]string `json:"feedback,omitempty"`
	ProbeError bool              `json:"probeError,omitempty"`
	DurationMS int64             `json:"durationMs"`
}

// attemptView is an attempt as a page in lang shows it.
func attemptView(a *store.Attempt, lang string) *AttemptView {
	if a == nil {
		return nil
	}
	v := &AttemptView{ID: a.ID, StepID: a.StepID, Kind: a.Kind, Passed: a.Passed, Answer: a.Answer, Error: a.Error,
		DurationMS: a.Duration.Milliseconds(), CreatedAt: a.CreatedAt, Results: []CheckResultView{}}
	for _, r := range a.Results {
		cr := CheckResultView{Index: r.Index, Passed: r.Passed, Observed: observedWords(r.ObservedWords, r.Observed, lang), ProbeError: r.ProbeError, DurationMS: r.Duration.Milliseconds()}
		cr.Name = textOf(r.Name)
		if len(r.Feedback) > 0 {
			cr.Feedback = textOf(r.Feedback)
		}
		v.Results = append(v.Results, cr)
	}
	return v
}

// observedWords is what a check observed as a learner reads it in lang:
// its stored words, or (for a result recorded before there were words)
// the raw value.
func observedWords(words json.RawMessage, observed, lang string) string {
	if len(words) > 0 {
		if s := labs.Text(textOf(words)).In(lang); s != "" {
			return s
		}
	}
	return observed
}

// textOf reads a stored by-language text ({"en": ..., "zh": ...}).
func textOf(raw json.RawMessage) map[string]string {
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return map[string]string{"en": s}
		}
		return nil
	}
	return m
}

// ProgressView is a provisioning stage that started or ended.
type ProgressView struct {
	Stage     string `json:"stage"`
	Title     string `json:"title"`
	Done      bool   `json:"done"`
	Failed    bool   `json:"failed,omitempty"`
	ElapsedMS int64  `json:"elapsedMs"`
}

// progressView names the stage in the language lg (the catalog's
// "stage_" messages), or as the event did for a stage the catalog lacks.
func progressView(e sandbox.Event, lg string) ProgressView {
	title := e.Title
	if _, ok := messages[lg]["stage_"+e.Stage]; ok {
		title = translate("stage_"+e.Stage, lg)
	}
	return ProgressView{Stage: e.Stage, Title: title, Done: e.Done, Failed: e.Failed, ElapsedMS: e.Elapsed.Milliseconds()}
}

// progressViews reads a sandbox's stored progress.
func progressViews(raw json.RawMessage, lg string) []ProgressView {
	var evs []sandbox.Event
	_ = json.Unmarshal(raw, &evs)
	out := make([]ProgressView, 0, len(evs))
	for _, e := range evs {
		out = append(out, progressView(e, lg))
	}
	return out
}

// NodeView is one node of a learner's cluster.
type NodeView struct {
	Alias     string `json:"alias"`
	Role      string `json:"role"`
	IP        string `json:"ip"`
	State     string `json:"state"`
	Container string `json:"container"`
}

func nodeViews(raw json.RawMessage) []NodeView {
	var ns []sandbox.Node
	_ = json.Unmarshal(raw, &ns)
	out := make([]NodeView, 0, len(ns))
	for _, n := range ns {
		out = append(out, NodeView{Alias: n.Alias, Role: n.Role, IP: n.IP, State: n.State, Container: n.Container})
	}
	return out
}

// eventView turns an engine event's data into its API view, in the
// language lg.
func eventView(e session.Event, lg string) session.Event {
	switch d := e.Data.(type) {
	case *store.Attempt:
		e.Data = attemptView(d, lg)
	case sandbox.Event:
		e.Data = progressView(d, lg)
	}
	return e
}

// SessionRef names a lab session: the learner's active one in GET
// /api/me, and in a start refused because of it.
type SessionRef struct {
	ID    string `json:"id"`
	LabID string `json:"labId"`
}

func sessionRef(sess *store.LabSession) *SessionRef {
	return &SessionRef{ID: sess.ID.String(), LabID: sess.LabID}
}

// MeView is GET /api/me: who is signed in, their CSRF token for cookie
// writes, and their active session.
type MeView struct {
	User          *UserView   `json:"user"`
	CSRFToken     string      `json:"csrfToken"`
	ActiveSession *SessionRef `json:"activeSession,omitempty"`
}

// ExtendedView is what extending a workshop's sessions answers: how many.
type ExtendedView struct {
	Extended int64 `json:"extended"`
}

// ResultsView is a workshop's results download (JSON).
type ResultsView struct {
	Workshop WorkshopRef `json:"workshop"`
	Results  []ResultRow `json:"results"`
}

// WorkshopRef names a workshop.
type WorkshopRef struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
}
