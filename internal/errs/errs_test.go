package errs

import (
	"errors"
	"fmt"
	"testing"
)

func TestKinds(t *testing.T) {
	sentinel := E(Conflict, "the name is taken")
	wrapped := fmt.Errorf("store: create team: %w", sentinel)
	reworded := Reword(wrapped, `a team named "x" exists; pick another name`)
	for _, tc := range []struct {
		name string
		err  error
		kind Kind
		msg  string
	}{
		{"plain", errors.New("boom"), Internal, "boom"},
		{"E", E(NotFound, "no such lab"), NotFound, "no such lab"},
		{"wrapped", wrapped, Conflict, "store: create team: the name is taken"},
		{"reworded", reworded, Conflict, `a team named "x" exists; pick another name`},
		{"Keyed", Keyed(Gone, "errlabgone", "lab x is gone", "lab", "x"), Gone, "lab x is gone"},
		{"no message", &Error{Kind: TooMany}, TooMany, "too many"},
		{"cause only", &Error{Kind: Unavailable, Err: errors.New("dial")}, Unavailable, "dial"},
	} {
		if got := KindOf(tc.err); got != tc.kind {
			t.Errorf("%s: kind %s, want %s", tc.name, got, tc.kind)
		}
		if tc.err.Error() != tc.msg {
			t.Errorf("%s: message %q, want %q", tc.name, tc.err.Error(), tc.msg)
		}
		if tc.kind != Internal && !errors.Is(tc.err, tc.kind) {
			t.Errorf("%s: errors.Is(err, %s) is false", tc.name, tc.kind)
		}
	}
	if !errors.Is(reworded, sentinel) || errors.Is(E(Conflict, "the name is taken"), sentinel) {
		t.Error("a sentinel is matched by identity, through rewording")
	}
	if errors.Is(reworded, NotFound) {
		t.Error("a conflict is a not-found")
	}
	if e, _ := As(Keyed(Gone, "k", "m", "lab", "x", "odd")); e.Args["lab"] != "x" || len(e.Args) != 1 {
		t.Errorf("args %v", e.Args)
	}
	if Kind(42).String() != "kind 42" {
		t.Error(Kind(42).String())
	}
}
