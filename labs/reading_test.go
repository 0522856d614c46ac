package labs

import (
	"regexp"
	"strings"
	"testing"
)

func strp(s string) *string { return &s }

// The first reading that fits the value says it, in the language asked
// (English when it has none), with {value} and {count} filled.
func TestSay(t *testing.T) {
	rs := []Reading{
		{Equals: strp("0"), Text: Text{"en": "no Pod is running", "zh": "没有 Pod 在运行"}},
		{Matches: `^Pending/`, Text: Text{"en": "the Pod is Pending ({value})"}},
		{Text: Text{"en": "{count} Pods: {value}", "zh": "{count} 个 Pod：{value}"}},
	}
	for _, tc := range []struct{ value, lang, want string }{
		{"0", "zh", "没有 Pod 在运行"},
		{"0", "en", "no Pod is running"},
		{"Pending/;", "zh", "the Pod is Pending (Pending/;)"},
		{"web-1 web-2", "zh", "2 个 Pod：web-1 web-2"},
		{"web-1\nweb-2\n", "en", "2 Pods: web-1; web-2"},
		{"{count}", "en", "1 Pods: {count}"}, // a value is never filled again
	} {
		if got, ok := Say(rs, tc.value, tc.lang); !ok || got != tc.want {
			t.Errorf("Say(%q, %s) = %q, %v; want %q", tc.value, tc.lang, got, ok, tc.want)
		}
	}
	if got, ok := Say(rs[:2], "Running", "en"); ok {
		t.Errorf("no reading fits Running, yet Say said %q", got)
	}
	if got := FillPlaceholders("{{ .Values.x }} {{.Values.y}} {value} {nope}", map[string]string{"value": "v"}); got != "{{ .Values.x }} {{.Values.y}} v {nope}" {
		t.Errorf("FillPlaceholders touched a template or an unknown name: %q", got)
	}
}

const withReadings = `        expect: {equals: Running}
        observed:
          - {equals: Running, en: web is running, zh: web 在运行}
          - {matches: "^(Pending|ContainerCreating)$", en: "web is not running yet: {value}", zh: "web 还没有运行：{value}"}
          - {en: "web is {value}", zh: "web 的状态是 {value}"}
`

// A lab's readings load as written; each mistake in them is a problem at
// its line and field.
func TestReadingProblems(t *testing.T) {
	y := edit(t, validLab, "        expect: {equals: Running}\n", withReadings)
	lab, ps := Load(labFS(y), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("a lab with readings has problems:\n%v", ps)
	}
	rs := lab.Steps[0].Checks[0].Observed
	if len(rs) != 3 || *rs[0].Equals != "Running" || rs[1].Matches == "" || rs[2].Text["zh"] != "web 的状态是 {value}" {
		t.Fatalf("readings read as %+v", rs)
	}
	if got, _ := Say(rs, "ContainerCreating", "zh"); got != "web 还没有运行：ContainerCreating" {
		t.Errorf("the loaded readings say %q", got)
	}

	const at = "steps[0].checks[0].observed"
	for _, tc := range []struct {
		name  string
		pairs []string
		w     want
	}{
		{"no Chinese", []string{"en: web is running, zh: web 在运行", "en: web is running"},
			want{20, at + "[0]", `a reading needs a Chinese text (zh: ...)`}},
		{"unknown placeholder", []string{`zh: "web 的状态是 {value}"`, `zh: "web 的状态是 {vaule}"`},
			want{22, at + "[2].zh", "unknown placeholder {vaule} in the Chinese text of a reading; a reading may use {value} and {count} (did you mean {value}?)"}},
		{"regexp", []string{`"^(Pending|ContainerCreating)$"`, `"^(Pending"`},
			want{21, at + "[1].matches", `matches "^(Pending" is not a regular expression`}},
		{"equals and matches", []string{"{equals: Running, en:", "{equals: Running, matches: Run, en:"},
			want{20, at + "[0].matches", "not both"}},
		{"every value, then more", []string{"{equals: Running, en:", "{en:"},
			want{20, at + "[0]", "reading 1 fits every value (it has no equals: or matches:), so the 2 after it are never shown; put it last"}},
		{"misspelt field", []string{"{equals: Running, en:", "{equls: Running, en:"},
			want{20, at + "[0].equls", "unknown field \"equls\" in a reading; did you mean `equals`?"}},
		{"a map, not a list", []string{withReadings, "        expect: {equals: Running}\n        observed: {en: \"{value}\", zh: \"{value}\"}\n"},
			want{19, "steps[0].checks[0].observed", "`observed` wants a list of readings, like [{en: \"{value} Pods\""}},
		{"a text that is a list", []string{"en: web is running,", "en: [web, running],"},
			want{20, at + "[0].en", "`observed[0].en` wants a single value, got a list"}},
		{"a template of no value", []string{"level: beginner\n", "level: beginner\nvalues:\n  - {name: app, oneOf: [web, api]}\n", "en: web is running,", "en: \"{{ .Values.nope }} runs\","},
			want{22, at + "[0].en", `no value "nope" is declared under values:`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ps := problems(t, labFS(edit(t, y, tc.pairs...)))
			if !tc.w.in(ps) {
				t.Errorf("missing %v in:\n%v", tc.w, ps)
			}
			if len(ps) != 1 {
				t.Errorf("%d problems, want 1:\n%v", len(ps), ps)
			}
		})
	}
}

// A combined check reads through its conditions: each has its own
// readings, and readings beside allOf are a problem.
func TestReadingsOfConditions(t *testing.T) {
	combined := `        allOf:
          - probe:
              kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
            expect: {equals: Running}
            observed: [{en: "web is {value}", zh: "web 的状态是 {value}"}]
          - not:
              probe:
                kube: {resource: pods, name: web, jsonpath: "{.spec.nodeName}"}
              expect: {equals: controlplane}
              observed: [{en: "web runs on {value}", zh: "web 运行在 {value} 上"}]
`
	y := edit(t, validLab, `        probe:
          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
        expect: {equals: Running}
`, combined)
	lab, ps := Load(labFS(y), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("problems:\n%v", ps)
	}
	leaves := lab.Steps[0].Checks[0].Conditions()
	if got, _ := Say(leaves[1].Observed, "node01", "zh"); got != "web 运行在 node01 上" {
		t.Errorf("the not's condition reads %q", got)
	}
	ps = problems(t, labFS(edit(t, y, "        allOf:\n", "        observed: [{en: x, zh: x}]\n        allOf:\n")))
	if w := (want{16, "steps[0].checks[0].observed", "observed: belongs with a probe:, whose value it reads; give each condition of allOf its own"}); !w.in(ps) || len(ps) != 1 {
		t.Errorf("missing %v alone in:\n%v", w, ps)
	}
}

// Readings take the session's values like every string of lab.yaml.
func TestReadingsTakeValues(t *testing.T) {
	y := edit(t, validLab,
		"level: beginner\n", "level: beginner\nvalues:\n  - {name: app, oneOf: [web, api]}\n",
		"        expect: {equals: Running}\n", "        expect: {equals: Running}\n        observed:\n          - {equals: \"{{ .Values.app }}\", en: \"it is {{ .Values.app }}\", zh: \"就是 {{ .Values.app }}\"}\n          - {en: \"{{ .Values.app }} is {value}\", zh: \"{{ .Values.app }} 的状态是 {value}\"}\n")
	lab, ps := Load(labFS(y), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("problems:\n%v", ps)
	}
	s, err := lab.For(Values{"app": "api"})
	if err != nil {
		t.Fatal(err)
	}
	rs := s.Steps[0].Checks[0].Observed
	for value, want := range map[string]string{"api": "就是 api", "Pending": "api 的状态是 Pending"} {
		if got, _ := Say(rs, value, "zh"); got != want {
			t.Errorf("%s reads %q, want %q", value, got, want)
		}
	}
	if !strings.Contains(lab.Steps[0].Checks[0].Observed[1].Text["en"], "{{") {
		t.Error("For filled the lab itself")
	}
}

// The built-in labs' readings are Chinese as GLOSSARY.zh.md writes it
// (rule 7): a space between Chinese and Latin letters or digits, and
// full-width punctuation; and the English reading has no Chinese in it.
func TestBuiltinReadingsTypography(t *testing.T) {
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatalf("built-in labs have problems:\n%v", ps)
	}
	cjk := `\p{Han}`
	noSpace := regexp.MustCompile(cjk + `[A-Za-z0-9{]|[A-Za-z0-9}]` + cjk)
	asciiPunct := regexp.MustCompile(`[,;:()]`)
	template := regexp.MustCompile(`\{\{.*?\}\}`)
	n := 0
	for _, l := range all {
		for _, s := range l.Steps {
			for i, c := range s.Checks {
				for _, leaf := range c.Conditions() {
					for _, r := range leaf.Observed {
						n++
						zh := template.ReplaceAllString(r.Text["zh"], "x")
						if noSpace.MatchString(zh) || asciiPunct.MatchString(zh) {
							t.Errorf("%s/%s check %d: Chinese reading %q: a space between Chinese and Latin, and full-width punctuation", l.ID, s.ID, i+1, r.Text["zh"])
						}
						if regexp.MustCompile(cjk).MatchString(r.Text["en"]) {
							t.Errorf("%s/%s check %d: English reading %q has Chinese in it", l.ID, s.ID, i+1, r.Text["en"])
						}
					}
				}
			}
		}
	}
	if n < 200 {
		t.Errorf("only %d readings in the built-in labs; the walk over them is broken", n)
	}
}
