package labs

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Reading is one way a probe's value reads to a learner: a text in each
// language in which {value} stands for the value read and {count} for how
// many whitespace-separated values it holds. With Equals or Matches it is
// the reading of those values only; without, of every value. A check (or a
// condition of one) lists its readings under observed:, and the first that
// fits the value read is what the lab page shows after "Observed:".
//
//	observed:
//	  - {equals: "0", en: no Pod is running, zh: 没有 Pod 在运行}
//	  - {en: "{count} Pods are running", zh: "有 {count} 个 Pod 在运行"}
type Reading struct {
	Equals  *string `yaml:"equals,omitempty"`
	Matches string  `yaml:"matches,omitempty"`
	// Text is the reading in each language (en:, zh: beside equals:).
	Text Text `yaml:",inline"`
}

// ReadingPlaceholders are what a reading's text may refer to.
var ReadingPlaceholders = []string{"value", "count"}

// placeholderRE finds {name} in a reading's text; {{ ... }} (a template of
// the session's values, filled before) is not one.
var placeholderRE = regexp.MustCompile(`\{([^{}\s]*)\}`)

// Fits says whether the reading is for value.
func (r *Reading) Fits(value string) bool {
	switch {
	case r.Equals != nil:
		return value == *r.Equals
	case r.Matches != "":
		re, err := regexp.Compile(r.Matches)
		return err == nil && re.MatchString(value)
	}
	return true
}

// Say is how value reads in lang by the first of readings that fits it
// (its English text when it has none in lang); ok is false when none fits.
// In the text, {value} is the value with its lines joined by "; ", and
// {count} the number of whitespace-separated values in it.
func Say(readings []Reading, value, lang string) (text string, ok bool) {
	for i := range readings {
		r := &readings[i]
		if !r.Fits(value) {
			continue
		}
		return FillPlaceholders(r.Text.In(lang), map[string]string{
			"value": JoinLines(value, "; "),
			"count": strconv.Itoa(len(strings.Fields(value))),
		}), true
	}
	return "", false
}

// JoinLines joins the non-empty lines of s, trimmed, with sep: a value of
// several lines (events, commands) said on one.
func JoinLines(s, sep string) string {
	var out []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, sep)
}

// FillPlaceholders replaces each {name} in s with args[name], once: a value
// that itself holds "{count}" is not filled again. An unknown name stays.
func FillPlaceholders(s string, args map[string]string) string {
	var b strings.Builder
	last := 0
	for _, m := range placeholders(s) {
		v, ok := args[s[m[2]:m[3]]]
		if !ok {
			continue
		}
		b.WriteString(s[last:m[0]])
		b.WriteString(v)
		last = m[1]
	}
	b.WriteString(s[last:])
	return b.String()
}

// placeholders finds the {name}s of s as regexp submatch indexes, leaving
// out the braces of a template action ({{.Values.x}}).
func placeholders(s string) [][]int {
	var out [][]int
	for _, m := range placeholderRE.FindAllStringSubmatchIndex(s, -1) {
		if (m[0] > 0 && s[m[0]-1] == '{') || (m[1] < len(s) && s[m[1]] == '}') {
			continue
		}
		out = append(out, m)
	}
	return out
}

// readings validates a condition's observed: readings (where is the
// condition).
func (v *validator) readings(where []any, rs []Reading) {
	where = append(slices.Clip(where), "observed")
	for i := range rs {
		r := &rs[i]
		at := append(slices.Clip(where), i)
		if r.Equals != nil && r.Matches != "" {
			v.at(append(at, "matches"), "a reading is for the values equals: names or those matches: fits, not both; write two readings")
		}
		if r.Matches != "" {
			if _, err := regexp.Compile(r.Matches); err != nil {
				v.at(append(at, "matches"), "matches %q is not a regular expression: %v", r.Matches, err)
			}
		}
		unknown := false
		keys := make([]string, 0, len(r.Text))
		for key := range r.Text {
			keys = append(keys, key)
		}
		slices.Sort(keys)
		for _, key := range keys {
			if !slices.Contains(Languages, key) {
				unknown = true
				if guess := closest(key, []string{"equals", "matches"}); guess != "" {
					v.at(append(at, key), "unknown field %q in a reading; did you mean `%s`?", key, guess)
				} else {
					v.at(append(at, key), "unknown field %q in a reading: a reading is a text in each language (%s), with equals: or matches: when it is for some values only", key, strings.Join(Languages, ", "))
				}
			}
		}
		// A misspelt equals: leaves a reading for every value; that
		// follows from the one mistake already reported.
		if r.Equals == nil && r.Matches == "" && i < len(rs)-1 && !unknown {
			v.at(at, "reading %d fits every value (it has no equals: or matches:), so the %d after it are never shown; put it last", i+1, len(rs)-1-i)
		}
		for _, lang := range v.langs {
			if strings.TrimSpace(r.Text[lang]) == "" {
				v.at(at, "a reading needs a %s text (%s: ...): it is what the lab page shows after \"Observed:\"", langName(lang), lang)
			}
		}
		for _, lang := range Languages {
			text := r.Text[lang]
			for _, m := range placeholders(text) {
				name := text[m[2]:m[3]]
				if slices.Contains(ReadingPlaceholders, name) {
					continue
				}
				msg := fmt.Sprintf("unknown placeholder {%s} in the %s text of a reading; a reading may use %s", name, langName(lang), placeholderList())
				if guess := closest(name, ReadingPlaceholders); guess != "" {
					msg += fmt.Sprintf(" (did you mean {%s}?)", guess)
				}
				v.at(append(at, lang), "%s", msg)
			}
		}
	}
}

func placeholderList() string {
	var out []string
	for _, p := range ReadingPlaceholders {
		out = append(out, "{"+p+"}")
	}
	return strings.Join(out, " and ")
}
