// Package webhooks sends podpath's events to the URLs an admin registered:
// JSON bodies signed with HMAC-SHA256 (Sign, Verify), written to a Postgres
// outbox in the transaction of the change they announce (Enqueue only
// inserts rows, in the caller's store.InTx) and POSTed by a
// Dispatcher, with retries and backoff, from any podpath process on the
// database. docs/TEAMS.md describes it for receivers.
package webhooks

import (
	"slices"
	"time"

	"github.com/google/uuid"
)

// Event types.
const (
	LabStarted     = "lab.started"
	StepPassed     = "step.passed"
	LabCompleted   = "lab.completed"
	TrackCompleted = "track.completed"
	WorkshopEnded  = "workshop.ended"
)

// Events are the event types a webhook may subscribe to.
var Events = []string{LabStarted, StepPassed, LabCompleted, TrackCompleted, WorkshopEnded}

// Known reports whether typ is an event type.
func Known(typ string) bool { return slices.Contains(Events, typ) }

// Envelope is every delivery's body.
type Envelope struct {
	ID        uuid.UUID `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"createdAt"`
	Data      any       `json:"data"`
}

// User is the learner an event is about.
type User struct {
	ID    int64  `json:"id"`
	Email string `json:"email"`
}

// LabStartedData is lab.started: a learner started a lab session (also a
// workshop's join, or an instructor's reset, starting one for them).
type LabStartedData struct {
	User       User   `json:"user"`
	LabID      string `json:"labId"`
	SessionID  string `json:"sessionId"`
	WorkshopID *int64 `json:"workshopId,omitempty"`
}

// StepPassedData is step.passed: a check passed a step (a skip does not
// count), sent once per step and session. Attempts counts the step's
// checks and skips in the session, this one too.
type StepPassedData struct {
	User       User   `json:"user"`
	LabID      string `json:"labId"`
	SessionID  string `json:"sessionId"`
	WorkshopID *int64 `json:"workshopId,omitempty"`
	StepID     string `json:"stepId"`
	Attempts   int    `json:"attempts"`
}

// LabCompletedData is lab.completed: every step of the session is passed
// or skipped. It is sent once per session.
type LabCompletedData struct {
	User        User      `json:"user"`
	LabID       string    `json:"labId"`
	SessionID   string    `json:"sessionId"`
	WorkshopID  *int64    `json:"workshopId,omitempty"`
	CompletedAt time.Time `json:"completedAt"`
	// TimeSpentSeconds runs from the session's start to its last step.
	TimeSpentSeconds int64 `json:"timeSpentSeconds"`
	// Attempts counts the checks and skips of every step; Skips the steps
	// skipped.
	Attempts int `json:"attempts"`
	Skips    int `json:"skips"`
}

// TrackCompletedData is track.completed: a learner finished every lab of
// a track. It is sent once per learner and track.
type TrackCompletedData struct {
	User        User      `json:"user"`
	TrackID     string    `json:"trackId"`
	CompletedAt time.Time `json:"completedAt"`
}

// WorkshopEndedData is workshop.ended: an instructor ended a workshop, or
// its time ran out. It is sent once per workshop.
type WorkshopEndedData struct {
	WorkshopID int64  `json:"workshopId"`
	Title      string `json:"title"`
	Learners   int    `json:"learners"`
}
