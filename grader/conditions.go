package grader

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/podpath/podpath/labs"
)

// judgeCondition judges a check's condition once: its probe and matcher,
// or its allOf, anyOf or not.
func (g *Grader) judgeCondition(ctx context.Context, c *labs.Condition, answer string) outcome {
	return combine(c, func(leaf *labs.Condition) outcome { return g.judgeLeaf(ctx, leaf, answer) })
}

// judgeLeaf reads a condition's probe and judges the value with its matcher.
func (g *Grader) judgeLeaf(ctx context.Context, c *labs.Condition, answer string) outcome {
	if c.Probe.Script != nil {
		o := g.script(ctx, c.Probe.Script)
		o.obs.Readings = c.Observed
		return o
	}
	v, err := g.read(ctx, &c.Probe, answer)
	if err != nil {
		return outcome{obs: errorObservation(err), probeErr: true}
	}
	if !v.missing {
		v.obs.Readings = c.Observed
	}
	return leafOutcome(&c.Expect, v, func(p *labs.Probe) (value, error) { return g.read(ctx, p, answer) })
}

// leafOutcome is the outcome of matcher m on the value v a probe read.
func leafOutcome(m *labs.Matcher, v value, other func(*labs.Probe) (value, error)) outcome {
	vd, err := judgeValue(m, v, other)
	if err != nil {
		return outcome{obs: errorObservation(err), probeErr: true}
	}
	obs := v.obs
	if vd.obs != nil {
		obs = *vd.obs
	}
	return outcome{passed: vd.ok, obs: obs, undecided: vd.undecided}
}

// partMax bounds what one part of a combined check shows, so that the
// whole says which part failed and what it read in a line or two.
const partMax = 160

// combine judges c, calling leaf for each probe and its matcher. allOf
// stops at the first part that fails and anyOf at the first that passes,
// so the part shown is the one that decided. A not passes only when its
// condition was judged and rejected: a probe that could not read (a node
// down) or a matcher with nothing to judge is no pass.
func combine(c *labs.Condition, leaf func(*labs.Condition) outcome) outcome {
	switch c.Combinator() {
	case "allOf":
		if len(c.AllOf) == 0 {
			// labs validate rejects it; a check built in code must not
			// pass by judging nothing.
			return outcome{obs: note(NoteCheckError, "detail", "allOf has no conditions"), probeErr: true}
		}
		all := note(NoteAllOfPassed)
		for i := range c.AllOf {
			o := combine(&c.AllOf[i], leaf)
			if !o.passed {
				return outcome{obs: about(NoteAllOfFailed, o.obs, "index", strconv.Itoa(i+1)),
					feedback: o.feedback, probeErr: o.probeErr, undecided: o.undecided || o.probeErr}
			}
			all.Of = append(all.Of, o.obs)
		}
		return outcome{passed: true, obs: all}
	case "anyOf":
		var feedback []labs.Text
		res := outcome{obs: note(NoteAnyOfNone)}
		for i := range c.AnyOf {
			o := combine(&c.AnyOf[i], leaf)
			if o.passed {
				return outcome{passed: true, obs: about(NoteAnyOfPassed, o.obs, "index", strconv.Itoa(i+1))}
			}
			res.obs.Of = append(res.obs.Of, o.obs)
			feedback = append(feedback, o.feedback)
			// One part that could not be judged may have been the one
			// that passes: the check cannot say it failed.
			res.probeErr = res.probeErr || o.probeErr
			res.undecided = res.undecided || o.undecided || o.probeErr
		}
		res.feedback = mergeText(feedback)
		return res
	case "not":
		o := combine(c.Not, leaf)
		switch {
		case o.probeErr:
			return outcome{obs: about(NoteNotError, o.obs), probeErr: true, undecided: true}
		case o.undecided:
			return outcome{obs: about(NoteNotUndecided, o.obs), undecided: true}
		case o.passed:
			return outcome{obs: about(NoteNotAccepted, o.obs)}
		}
		return outcome{passed: true, obs: about(NoteNotRejected, o.obs)}
	}
	return leaf(c)
}

func cut(s string) string {
	s = strings.ReplaceAll(s, "\n", " ⏎ ")
	if r := []rune(s); len(r) > partMax {
		return string(r[:partMax-1]) + "…"
	}
	return s
}

// ordinal writes 1st, 2nd, 3rd, 4th, ... 11th, 12th, 13th, 21st.
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return fmt.Sprintf("%d%s", n, suffix)
}
