package session

import (
	"errors"
	"fmt"
)

// Kinds of error the engine returns. The server maps each to an HTTP status
// (ErrNotFound 404, ErrConflict 409, ErrGone 410, ErrForbidden 403,
// ErrUnavailable 503); the message is for the learner.
var (
	ErrNotFound    = errors.New("not found")
	ErrConflict    = errors.New("conflict")
	ErrGone        = errors.New("gone")
	ErrForbidden   = errors.New("forbidden")
	ErrUnavailable = errors.New("unavailable")
)

// ErrNotSaved marks an ErrUnavailable error of a change Postgres did not
// take (a start, an attempt): nothing of it was written, and it may be
// tried again.
var ErrNotSaved = errors.New("not saved")

// Error is an engine error of one kind with a sentence for the learner.
type Error struct {
	Kind    error
	Message string
	also    error
}

func (e *Error) Error() string { return e.Message }

// Unwrap lets errors.Is match the kind (and ErrNotSaved).
func (e *Error) Unwrap() []error {
	if e.also != nil {
		return []error{e.Kind, e.also}
	}
	return []error{e.Kind}
}

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// notSaved is the ErrUnavailable error of a change that was not stored.
func notSaved(message string) error {
	return &Error{Kind: ErrUnavailable, Message: message, also: ErrNotSaved}
}
