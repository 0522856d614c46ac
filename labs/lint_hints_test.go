package labs

import "testing"

// A check with one hint is reported at its hints, in the file, line and
// field of the list; one with two or more is not.
func TestOneHintIsNotEnough(t *testing.T) {
	y := edit(t, validLab,
		"        hints: [{en: Ask containerd on the node, zh: 去节点上问 containerd},\n          {en: Use crictl, zh: 用 crictl}]\n",
		"        hints:\n          - {en: Use crictl, zh: 用 crictl}\n")
	ps := problems(t, labFS(y))
	w := want{34, "steps[1].checks[0].hints", "a check needs at least 2 hints, shown one more per failed attempt"}
	if !w.in(ps) {
		t.Errorf("missing %v in:\n%v", w, ps)
	}
	if len(ps) != 1 {
		t.Fatalf("%d problems, want 1 (the first check has two hints):\n%v", len(ps), ps)
	}
	if s := ps[0].String(); s != "lab/lab.yaml:34: "+ps[0].Message+" (at steps[1].checks[0].hints)" {
		t.Errorf("printed as %q", s)
	}
}

// A check with no hints gets the one problem that says so, not also this
// one.
func TestNoHintsIsOneProblem(t *testing.T) {
	y := edit(t, validLab,
		"        hints: [{en: Ask containerd on the node, zh: 去节点上问 containerd},\n          {en: Use crictl, zh: 用 crictl}]\n", "")
	ps := problems(t, labFS(y))
	if len(ps) != 1 || !(want{29, "steps[1].checks[0].hints", "a check needs hints"}).in(ps) {
		t.Errorf("want only \"a check needs hints\", got:\n%v", ps)
	}
}

// Every built-in lab teaches with at least two hints per check.
func TestBuiltinChecksHaveTwoHints(t *testing.T) {
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatalf("built-in labs have problems:\n%v", ps)
	}
	for _, l := range all {
		for _, s := range l.Steps {
			for i, c := range s.Checks {
				if len(c.Hints) < minHints {
					t.Errorf("%s step %s check %d: %d hints", l.ID, s.ID, i+1, len(c.Hints))
				}
			}
		}
	}
}
