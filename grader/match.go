package grader

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podpath/podpath/labs"
)

// verdict is a matcher's judgement of one value.
type verdict struct {
	ok bool
	// obs, when set, is what the judgement observed instead of the plain
	// value: the value with the matcher's note on it. sameAs never shows
	// the real value it compared against.
	obs *Observation
	// undecided says the matcher had nothing to judge: the value is no
	// number, or the cluster shows nothing to compare with. It fails, and
	// a not of it fails too.
	undecided bool
}

// judgeValue judges v with m. other reads the probe of sameAs and
// differsFrom; every other matcher needs nothing but v.
func judgeValue(m *labs.Matcher, v value, other func(*labs.Probe) (value, error)) (verdict, error) {
	s := v.s
	fold := func(x string) string {
		if m.IgnoreCase {
			return strings.ToLower(x)
		}
		return x
	}
	switch {
	case m.Equals != nil:
		return verdict{ok: fold(s) == fold(*m.Equals)}, nil
	case m.NotEquals != nil:
		return verdict{ok: fold(s) != fold(*m.NotEquals)}, nil
	case m.Matches != "":
		re, err := regexp.Compile(m.Matches)
		if err != nil {
			return verdict{}, err
		}
		return verdict{ok: re.MatchString(s)}, nil
	case m.Contains != "":
		return verdict{ok: strings.Contains(fold(s), fold(m.Contains))}, nil
	case m.NotContains != "":
		return verdict{ok: !strings.Contains(fold(s), fold(m.NotContains))}, nil
	case m.Empty:
		return verdict{ok: s == ""}, nil
	case m.NonEmpty:
		return verdict{ok: s != ""}, nil
	case m.GT != nil, m.GE != nil, m.LT != nil, m.LE != nil:
		n, ok := number(s)
		if !ok {
			return verdict{obs: ptr(about(NoteNotNumber, v.obs)), undecided: true}, nil
		}
		return verdict{ok: compare(m, n)}, nil
	case m.Quantity != "":
		want, err := resource.ParseQuantity(strings.TrimSpace(m.Quantity))
		if err != nil {
			return verdict{}, fmt.Errorf("quantity %q: %v", m.Quantity, err)
		}
		got, err := resource.ParseQuantity(strings.TrimSpace(s))
		if err != nil {
			return verdict{obs: ptr(about(NoteNotQuantity, v.obs)), undecided: true}, nil
		}
		return verdict{ok: got.Cmp(want) == 0}, nil
	case m.Count != nil:
		n := len(strings.Fields(s))
		inner, err := judgeValue(m.Count, value{s: strconv.Itoa(n)}, other)
		return verdict{ok: inner.ok, obs: ptr(about(NoteCount, v.obs, "n", strconv.Itoa(n)))}, err
	case m.SameAs != nil, m.DiffersFrom != nil:
		p := m.SameAs
		if p == nil {
			p = m.DiffersFrom
		}
		w, err := other(p)
		if err != nil {
			return verdict{}, err
		}
		if w.missing {
			cannot := about(NoteCannotCompare, v.obs)
			cannot.Of = append(cannot.Of, w.obs)
			return verdict{obs: &cannot, undecided: true}, nil
		}
		// Nothing never matches: an empty answer is no answer, and an
		// empty reading means the cluster has nothing to compare yet.
		if s == "" {
			return verdict{undecided: true}, nil
		}
		if w.s == "" {
			return verdict{ok: m.DiffersFrom != nil, obs: ptr(about(NoteNothingYet, v.obs)), undecided: m.SameAs != nil}, nil
		}
		a, b := fold(s), fold(w.s)
		same := a == b || (m.MinPrefix > 0 && len(a) >= m.MinPrefix && strings.HasPrefix(b, a))
		if m.SameAs != nil {
			if same {
				return verdict{ok: true, obs: ptr(about(NoteSame, v.obs))}, nil
			}
			return verdict{obs: ptr(about(NoteNotSame, v.obs))}, nil
		}
		if same {
			return verdict{obs: ptr(about(NoteNotDifferent, v.obs))}, nil
		}
		// The other value is for the record only: a learner is not
		// shown what a check compares with.
		return verdict{ok: true, obs: ptr(about(NoteDifferent, v.obs, "other", shorten(w.obs.Raw())))}, nil
	}
	return verdict{}, fmt.Errorf("the check has no matcher")
}

func ptr(o Observation) *Observation { return &o }

// number reads a number, or a Kubernetes quantity as the number it is:
// 250m is 0.25, 128Mi is 134217728, 1e3 is 1000.
func number(s string) (float64, bool) {
	s = strings.TrimSpace(s)
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return n, true
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, false
	}
	return q.AsApproximateFloat64(), true
}

func compare(m *labs.Matcher, n float64) bool {
	switch {
	case m.GT != nil:
		return n > *m.GT
	case m.GE != nil:
		return n >= *m.GE
	case m.LT != nil:
		return n < *m.LT
	}
	return n <= *m.LE
}
