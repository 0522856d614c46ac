package labs

// minHints is how many hints a check needs: the grader shows one more per
// failed attempt, so a single hint either gives the command away at the
// first failure or leaves a learner who is still stuck with nothing new.
const minHints = 2

// hintCount checks that a check teaches before it tells: at least two
// hints, the first a nudge toward the layer to look at, the last the most
// concrete. A check with no hints at all is reported by check.
func (v *validator) hintCount(where []any, c *Check) {
	if n := len(c.Hints); n > 0 && n < minHints {
		v.at(append(where, "hints"), "a check needs at least %d hints, shown one more per failed attempt: first a nudge toward the layer to look at (which component owns this state, which file or object records it), then more concrete ones; only the last may give the command", minHints)
	}
}
