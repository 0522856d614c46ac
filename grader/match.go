package grader

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/podpath/podpath/labs"
)

// match judges v. note, when set, replaces the observed value shown to the
// learner (sameAs never shows the real value it compared against).
func (g *Grader) match(ctx context.Context, m *labs.Matcher, v value, answer string) (ok bool, note string, err error) {
	s := v.s
	fold := func(x string) string {
		if m.IgnoreCase {
			return strings.ToLower(x)
		}
		return x
	}
	switch {
	case m.Equals != nil:
		return fold(s) == fold(*m.Equals), "", nil
	case m.NotEquals != nil:
		return fold(s) != fold(*m.NotEquals), "", nil
	case m.Matches != "":
		re, err := regexp.Compile(m.Matches)
		if err != nil {
			return false, "", err
		}
		return re.MatchString(s), "", nil
	case m.Contains != "":
		return strings.Contains(fold(s), fold(m.Contains)), "", nil
	case m.NotContains != "":
		return !strings.Contains(fold(s), fold(m.NotContains)), "", nil
	case m.Empty:
		return s == "", "", nil
	case m.NonEmpty:
		return s != "", "", nil
	case m.GT != nil, m.GE != nil, m.LT != nil, m.LE != nil:
		n, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil {
			return false, fmt.Sprintf("%s (not a number)", v.display()), nil
		}
		return compare(m, n), "", nil
	case m.Count != nil:
		n := len(strings.Fields(s))
		ok, _, err := g.match(ctx, m.Count, value{s: strconv.Itoa(n)}, answer)
		return ok, fmt.Sprintf("%d (%s)", n, shorten(v.display())), err
	case m.SameAs != nil, m.DiffersFrom != nil:
		other := m.SameAs
		if other == nil {
			other = m.DiffersFrom
		}
		w, err := g.read(ctx, other, answer)
		if err != nil {
			return false, "", err
		}
		if w.missing != "" {
			return false, "cannot compare: " + w.missing, nil
		}
		// Nothing never matches: an empty answer is no answer, and an
		// empty reading means the cluster has nothing to compare yet.
		if s == "" {
			return false, v.display(), nil
		}
		if w.s == "" {
			return m.DiffersFrom != nil, v.display() + " (the cluster shows nothing to compare with yet)", nil
		}
		a, b := fold(s), fold(w.s)
		same := a == b || (m.MinPrefix > 0 && len(a) >= m.MinPrefix && strings.HasPrefix(b, a))
		if m.SameAs != nil {
			if same {
				return true, v.display() + " (matches the cluster)", nil
			}
			return false, v.display() + " (does not match what the cluster shows)", nil
		}
		if same {
			return false, v.display() + " (the same as the value it must differ from)", nil
		}
		return true, v.display() + " (differs, as it should: " + shorten(w.display()) + ")", nil
	}
	return false, "", fmt.Errorf("the check has no matcher")
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
