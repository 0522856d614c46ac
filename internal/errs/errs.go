// Package errs is the one error type podpath's domain returns: a Kind
// (what went wrong, in terms a caller can act on), a sentence for the
// person who asked, and optionally a message-catalog key to say it in
// their language, details for the answer and the cause.
//
// No package but server knows which HTTP status a kind gets
// (server/errors.go holds the one table).
package errs

import (
	"errors"
	"fmt"
)

// Kind is what went wrong. The zero Kind is Internal.
type Kind int

// Kinds of error.
const (
	// Internal is a fault of ours: the person who asked can do nothing.
	Internal Kind = iota
	// Invalid: the request is wrong; fix it and send it again.
	Invalid
	// Unauthenticated: sign in first.
	Unauthenticated
	// Forbidden: signed in, and not allowed.
	Forbidden
	// NotFound: there is no such thing (or not for this asker).
	NotFound
	// Conflict: the state of things refuses it now (taken, not ready, full).
	Conflict
	// Gone: it existed and has ended.
	Gone
	// TooLarge: the request is larger than allowed.
	TooLarge
	// TooMany: too many requests; wait.
	TooMany
	// Unavailable: something podpath needs is down; try again later.
	Unavailable
)

var kindNames = [...]string{"internal", "invalid", "unauthenticated", "forbidden", "not found", "conflict", "gone", "too large", "too many", "unavailable"}

func (k Kind) String() string {
	if int(k) >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind %d", int(k))
}

// Error makes a Kind an error, so that errors.Is(err, errs.NotFound)
// asks an error's kind.
func (k Kind) Error() string { return k.String() }

// Error is an error of a kind.
type Error struct {
	Kind Kind
	// Message is the sentence for the person who asked (in English).
	Message string
	// Key names Message in the server's message catalog, with Args to fill
	// in its {names}, so that it can be said in the asker's language.
	Key  string
	Args map[string]string
	// Detail are more fields of the answer (e.g. the active session a
	// refused start names).
	Detail map[string]any
	// Err is the cause, if any.
	Err error
}

func (e *Error) Error() string {
	switch {
	case e.Message != "":
		return e.Message
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Kind.String()
}

// Unwrap gives the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches a Kind: errors.Is(err, errs.Conflict).
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// E is an error of kind with a message.
func E(kind Kind, msg string) *Error { return &Error{Kind: kind, Message: msg} }

// Keyed is an error of kind with a message and the catalog key (and
// arguments, name then value) that say it in other languages.
func Keyed(kind Kind, key, msg string, args ...string) *Error {
	e := &Error{Kind: kind, Message: msg, Key: key}
	for i := 0; i+1 < len(args); i += 2 {
		if e.Args == nil {
			e.Args = map[string]string{}
		}
		e.Args[args[i]] = args[i+1]
	}
	return e
}

// Reword is err, of its kind, told in other words: a caller that knows
// more says what to do. The cause stays for errors.Is.
func Reword(err error, msg string) *Error {
	return &Error{Kind: KindOf(err), Message: msg, Err: err}
}

// KindOf is the kind of err: of the first Error in its chain, Internal if
// none.
func KindOf(err error) Kind {
	if e, ok := As(err); ok {
		return e.Kind
	}
	return Internal
}

// As finds the first Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}
