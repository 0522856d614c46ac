package session

import (
	"errors"
	"fmt"

	"github.com/podpath/podpath/internal/errs"
)

// The engine's refusals: errs of a kind, in English, with the message
// catalog's key (and arguments) that says them in the learner's language.

func errEnded() error {
	return errs.Keyed(errs.Gone, "errsessionended", "this session has ended; start the lab again")
}

func errLabGone(lab string) error {
	return errs.Keyed(errs.Gone, "errlabgone", fmt.Sprintf("lab %s is no longer installed on this server", lab), "lab", lab)
}

func errNoStep(lab, step string) error {
	return errs.Keyed(errs.NotFound, "errnostep", fmt.Sprintf("lab %s has no step %q", lab, step), "lab", lab, "step", fmt.Sprintf("%q", step))
}

func errNoSkip() error {
	return errs.Keyed(errs.Forbidden, "errnoskip", "this step cannot be skipped")
}

// errNotReady: the cluster is in state, not ready.
func errNotReady(state string) error {
	return errs.Keyed(errs.Conflict, "errnotready", fmt.Sprintf("the cluster is not ready yet (it is %s)", state), "state", state)
}

func errRetry(state string) error {
	return errs.Keyed(errs.Conflict, "errretry", fmt.Sprintf("only a failed cluster can be retried; this one is %s", state), "state", state)
}

func errFinding() error {
	return errs.Keyed(errs.Unavailable, "errfinding", "the server is still finding its clusters (is Docker running?); try again in a minute")
}

func dockerDown(err error) error {
	e := errs.Keyed(errs.Unavailable, "errdocker", fmt.Sprintf(
		"Docker does not answer (%v): start dockerd (scripts/quickstart does); podpath changes no cluster until it answers, and tries again every few seconds", err),
		"why", err.Error())
	e.Err = err
	return e
}

// ErrNotSaved marks an Unavailable error of a change Postgres did not take
// (a start, an attempt): nothing of it was written, and it may be tried
// again.
var ErrNotSaved = errors.New("not saved")

// notSaved is the Unavailable error of a change that was not stored; key
// says it in the learner's language.
func notSaved(key, message string) error {
	e := errs.Keyed(errs.Unavailable, key, message)
	e.Err = ErrNotSaved
	return e
}
