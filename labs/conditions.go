package labs

// Condition is what a check judges: a probe and the matcher of its value,
// or exactly one of AllOf, AnyOf and Not over conditions. A check's own
// probe and expect (or allOf, anyOf, not) are its condition; within, holds,
// timeout and hints belong to the check and apply to all of it.
type Condition struct {
	Probe  Probe   `yaml:"probe,omitempty"`
	Expect Matcher `yaml:"expect,omitempty"`
	// AllOf passes when every condition passes (the first that fails
	// decides), AnyOf when one passes (the first that passes decides).
	AllOf []Condition `yaml:"allOf,omitempty"`
	AnyOf []Condition `yaml:"anyOf,omitempty"`
	// Not passes when its condition reads a value and rejects it; a probe
	// that cannot read, or a matcher with nothing to judge, is no pass.
	Not *Condition `yaml:"not,omitempty"`
	// Observed says how the probe's value reads (see Reading).
	Observed []Reading `yaml:"observed,omitempty"`
}

// Combinators are the ways a check or condition combines conditions.
var Combinators = []string{"allOf", "anyOf", "not"}

// Combinator names the condition's combinator, or "" for a probe and its
// matcher.
func (c *Condition) Combinator() string {
	switch {
	case c.AllOf != nil:
		return "allOf"
	case c.AnyOf != nil:
		return "anyOf"
	case c.Not != nil:
		return "not"
	}
	return ""
}

// Parts are the conditions the combinator combines (none for a probe).
func (c *Condition) Parts() []Condition {
	switch {
	case c.AllOf != nil:
		return c.AllOf
	case c.AnyOf != nil:
		return c.AnyOf
	case c.Not != nil:
		return []Condition{*c.Not}
	}
	return nil
}

// Condition is the check's condition: its probe and expect, or its allOf,
// anyOf or not.
func (c *Check) Condition() *Condition {
	return &Condition{Probe: c.Probe, Expect: c.Expect, AllOf: c.AllOf, AnyOf: c.AnyOf, Not: c.Not, Observed: c.Observed}
}

// Conditions are the check's probes with their matchers, however deeply
// allOf, anyOf and not nest them, in the order they are written.
func (c *Check) Conditions() []*Condition {
	return c.Condition().Leaves()
}

// Leaves are the probe-and-matcher conditions under c (c itself when it
// combines nothing), in order.
func (c *Condition) Leaves() []*Condition {
	var out []*Condition
	c.walk(nil, false, func(_ []any, leaf *Condition, _ bool) { out = append(out, leaf) })
	return out
}

// walk calls fn for every probe-and-matcher condition under c with its
// path from c (allOf, 1, not, ...) and whether an odd number of nots is
// around it, so that what passes for it fails for the check.
func (c *Condition) walk(path []any, negated bool, fn func(path []any, leaf *Condition, negated bool)) {
	switch c.Combinator() {
	case "allOf", "anyOf":
		parts := c.Parts()
		for i := range parts {
			parts[i].walk(appendPath(appendPath(path, c.Combinator()), i), negated, fn)
		}
	case "not":
		c.Not.walk(appendPath(path, "not"), !negated, fn)
	default:
		fn(path, c, negated)
	}
}
