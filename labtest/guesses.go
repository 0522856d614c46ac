package labtest

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/podpath/podpath/grader"
	"github.com/podpath/podpath/internal/names"
	"github.com/podpath/podpath/labs"
)

// maxGuesses bounds the answers tried per step (each is a Check).
const maxGuesses = 150

var (
	codeSpan  = regexp.MustCompile("`([^`\n]{1,120})`")
	valueWord = regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9._:/=+-]*[A-Za-z0-9]|[0-9]`)
)

// answerGuesses are the answers a learner could submit without doing the
// step: the empty answer, every code span and every word or number of the
// step's text, its check names and hints and the lab's summary, in every
// language, and the readings of its checks' values (issue 9: an answer
// printed anywhere the learner can read must not pass); then what another session of the lab would pass with: the
// values its answer checks expect, and the words of its texts.
func answerGuesses(lab *labs.Lab, step *labs.Step, other *labs.Lab, otherStep *labs.Step) []string {
	seen := map[string]bool{"": true}
	out := []string{""}
	add := func(s string) {
		s = strings.TrimSpace(s)
		if s == "" || seen[s] || len(out) >= maxGuesses {
			return
		}
		seen[s] = true
		out = append(out, s)
	}
	words := func(lab *labs.Lab, step *labs.Step) {
		all := textsOf(lab, step)
		// code spans first: they are where an answer is most often shown
		for _, s := range all {
			for _, m := range codeSpan.FindAllStringSubmatch(s, -1) {
				add(m[1])
			}
		}
		for _, s := range all {
			for _, w := range valueWord.FindAllString(s, -1) {
				add(w)
			}
		}
	}
	words(lab, step)
	if other != nil && otherStep != nil && len(other.Vals) > 0 {
		for _, v := range expectedLiterals(otherStep) {
			add(v)
		}
		words(other, otherStep)
	}
	return out
}

// textsOf are the texts a learner reads around a step, step text rendered
// as the lab page renders it.
func textsOf(lab *labs.Lab, step *labs.Step) []string {
	body := labs.Text{}
	data := labs.SampleData(lab)
	data.Images = labs.Images{Nginx: names.NginxImage, Tools: names.ToolsImage}
	if lab.Vals != nil {
		data.Values = lab.Vals
	}
	for l, md := range step.Body {
		if r, err := lab.Render(md, data); err == nil {
			body[l] = r
		} else {
			body[l] = md
		}
	}
	var texts []labs.Text
	texts = append(texts, lab.Summary, step.Title, body, step.Answer)
	for _, c := range step.Checks {
		texts = append(texts, c.Name)
		texts = append(texts, c.Hints...)
		// Readings (observed:) are shown under the check once it ran.
		for _, leaf := range c.Conditions() {
			for _, r := range leaf.Observed {
				texts = append(texts, r.Text)
			}
		}
	}
	var all []string
	for _, t := range texts {
		langs := make([]string, 0, len(t))
		for l := range t {
			langs = append(langs, l)
		}
		sort.Strings(langs)
		for _, l := range langs {
			all = append(all, t[l])
		}
	}
	return all
}

// expectedLiterals are the values a step's answer checks compare with when
// the lab writes them (filled with a session's values): what that session
// would type.
func expectedLiterals(step *labs.Step) []string {
	var out []string
	for _, c := range step.Checks {
		if c.Probe.Answer == nil {
			continue
		}
		m := c.Expect
		if m.Equals != nil {
			out = append(out, *m.Equals)
		}
		if m.Contains != "" {
			out = append(out, m.Contains)
		}
		if lit := strings.TrimSuffix(strings.TrimPrefix(m.Matches, "^"), "$"); lit != "" && regexp.QuoteMeta(lit) == lit {
			out = append(out, lit)
		}
	}
	return out
}

// typedNotRun are history lines that mention each of the solve's commands
// without running them: as a comment and as echo's argument.
func typedNotRun(step *labs.Step) []string {
	var out []string
	for _, a := range step.Solve {
		for _, line := range strings.Split(a.Run, "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.Contains(line, ".bash_history") {
				continue
			}
			out = append(out, "# "+line, "echo "+labs.ShellQuote(line))
		}
	}
	return out
}

// honesty tries the guesses on a step whose solve has not run, and returns
// how many it tried and the ones the step passed with.
func honesty(ctx context.Context, g *grader.Grader, target grader.Target, step *labs.Step, lab *labs.Lab, otherStep *labs.Step, other *labs.Lab, since time.Time) (tried []string, fooled []string) {
	nodes := map[string]bool{}
	for i := range step.Checks {
		for _, c := range step.Checks[i].Conditions() {
			if c.Probe.History != nil {
				nodes[c.Probe.History.Node] = true
			}
		}
	}
	if lines := typedNotRun(step); len(nodes) > 0 && len(lines) > 0 {
		var b strings.Builder
		for _, l := range lines {
			fmt.Fprintf(&b, "#%d\n%s\n", time.Now().Unix(), l)
		}
		for node := range nodes {
			_, _ = target.Exec(ctx, node, []string{"sh", "-c", "cat >> " + grader.HistoryFile}, strings.NewReader(b.String()), io.Discard, io.Discard)
		}
		tried = append(tried, "the solve's commands as comments and echo")
		if grader.Passed(g.CheckStep(ctx, step, grader.Options{NoWait: true, Attempt: 1, Since: since})) {
			fooled = append(fooled, "typing the solve's commands as comments or echo's arguments passes")
		}
	}
	if !step.NeedsAnswer() {
		return tried, fooled
	}
	guesses := answerGuesses(lab, step, other, otherStep)
	// A check that reads no answer judges the same whatever is typed: when
	// one of them fails now, no guess can pass the step, and the guesses
	// need not be sent one by one (each is a round of probes on the nodes:
	// two minutes for a step's 110 guesses on a busy host).
	fixed := *step
	fixed.Checks = nil
	for i := range step.Checks {
		if !readsAnswer(&step.Checks[i]) {
			fixed.Checks = append(fixed.Checks, step.Checks[i])
		}
	}
	if len(fixed.Checks) > 0 {
		for _, r := range g.CheckStep(ctx, &fixed, grader.Options{NoWait: true, Attempt: 1, Since: since}) {
			if !r.Passed {
				tried = append(tried, fmt.Sprintf("no answer of %d: %q, which reads none, fails before the solve", len(guesses)-1, r.Name.In("en")))
				return tried, fooled
			}
		}
	}
	// A few at once: a guess is mostly waiting for docker exec.
	passed := make([]bool, len(guesses))
	sem := make(chan struct{}, guessesAtOnce)
	var wg sync.WaitGroup
	for i, guess := range guesses {
		if guess == "" {
			continue // the waited check above had the empty answer
		}
		tried = append(tried, strconv.Quote(guess))
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			passed[i] = grader.Passed(g.CheckStep(ctx, step, grader.Options{NoWait: true, Attempt: 1, Since: since, Answer: guess}))
		}()
	}
	wg.Wait()
	for i, guess := range guesses {
		if passed[i] {
			fooled = append(fooled, fmt.Sprintf("the answer %q, which the lab's texts or another session show, passes", guess))
		}
	}
	return tried, fooled
}

// guessesAtOnce is how many guesses are judged at once.
const guessesAtOnce = 4

// leaks are the results whose observed words or feedback show answer as a
// value of its own (not inside a longer one: "4" in "10.244.1.4" is no
// leak, "4 values: a b c d" is), in any language: what a learner who did
// the work but read nothing could copy into the answer box. The words are
// what the lab page shows; the raw Observed is kept for instructors only.
func leaks(results []grader.Result, answer string) []string {
	answer = strings.TrimSpace(answer)
	if answer == "" {
		return nil
	}
	re := regexp.MustCompile(`(^|[\s(\[{"'=,:：（“])` + regexp.QuoteMeta(answer) + `($|[\s)\]}"',;。，；：）”])`)
	var out []string
	for _, r := range results {
		for _, lang := range sortedLangs(r.Words) {
			if w := r.Words[lang]; re.MatchString(w) {
				out = append(out, fmt.Sprintf("check %q shows the answer %q in what it observed, in %s (%s)", r.Name.In("en"), answer, lang, w))
			}
		}
		for _, lang := range sortedLangs(r.Feedback) {
			if f := r.Feedback[lang]; re.MatchString(f) {
				out = append(out, fmt.Sprintf("check %q shows the answer %q in its %s feedback", r.Name.In("en"), answer, lang))
			}
		}
	}
	return out
}

func sortedLangs(t labs.Text) []string {
	langs := make([]string, 0, len(t))
	for l := range t {
		langs = append(langs, l)
	}
	sort.Strings(langs)
	return langs
}

// readsAnswer reports whether a check reads the learner's answer.
func readsAnswer(c *labs.Check) bool {
	for _, cond := range c.Conditions() {
		e := &cond.Expect
		if cond.Probe.Answer != nil || (e.SameAs != nil && e.SameAs.Answer != nil) || (e.DiffersFrom != nil && e.DiffersFrom.Answer != nil) {
			return true
		}
	}
	return false
}
