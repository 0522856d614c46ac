package labs

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// valuesLab declares values and uses them in a manifest, a check, a hint,
// a solve and the step text.
func valuesLab(t *testing.T, extra ...string) (*Lab, Problems) {
	t.Helper()
	y := edit(t, validLab,
		"cluster:\n", "values:\n  - {name: replicas, int: {min: 2, max: 5}}\n  - {name: app, word: 6}\n  - {name: cpu, oneOf: [\"200\", \"300\"]}\ncluster:\n",
		`jsonpath: "{.status.phase}"}`, `jsonpath: "{.status.phase}"}`+"\n        # the quota\n",
		"expect: {equals: Running}", `expect: {equals: "{{ .Values.app }}-{{ mul .Values.cpu 100 }}"}`,
		"hints: [{en: Which object records the pod, zh: 哪个对象记录了这个 Pod},", "hints: [{en: \"Look at {{ .Values.app }}\", zh: \"看看 {{ .Values.app }}\"},",
		"      - run: kubectl get pods\n", "      - run: kubectl scale deploy/{{ .Values.app }} --replicas={{ .Values.replicas }}\n",
	)
	y = edit(t, y, extra...)
	fs := labFS(y)
	fs["lab/manifests/pod.yaml"].Data = []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: \"{{ .Values.app }}\"}\nspec: {containers: [{name: c, image: x}]}\n")
	fs["lab/steps/first.en.md"].Data = []byte("Scale {{ .Values.app }} to {{ .Values.replicas }}.")
	return Load(fs, "lab", bothLanguages)
}

func TestValuesFillTheSessionsLab(t *testing.T) {
	lab, ps := valuesLab(t)
	if len(ps) > 0 {
		t.Fatalf("problems: %v", ps)
	}
	r := rand.New(rand.NewPCG(7, 8))
	vals := lab.Draw(r)
	n, err := strconv.Atoi(vals["replicas"])
	if err != nil || n < 2 || n > 5 {
		t.Fatalf("replicas drawn %q, want 2..5", vals["replicas"])
	}
	if len(vals["app"]) != 6 || strings.ContainsAny(vals["app"], "lo0123456789") {
		t.Fatalf("app drawn %q, want 6 letters without l and o", vals["app"])
	}
	s, err := lab.For(vals)
	if err != nil {
		t.Fatal(err)
	}
	wantEq := vals["app"] + "-" + map[string]string{"200": "20000", "300": "30000"}[vals["cpu"]]
	if got := *s.Steps[0].Checks[0].Expect.Equals; got != wantEq {
		t.Errorf("expect filled as %q, want %q", got, wantEq)
	}
	if got := s.Steps[0].Checks[0].Hints[0]["zh"]; got != "看看 "+vals["app"] {
		t.Errorf("hint filled as %q", got)
	}
	if got := s.Steps[0].Solve[0].Run; got != "kubectl scale deploy/"+vals["app"]+" --replicas="+vals["replicas"] {
		t.Errorf("solve filled as %q", got)
	}
	b, err := s.Files("manifests/pod.yaml")
	if err != nil || !strings.Contains(string(b), `name: "`+vals["app"]+`"`) {
		t.Errorf("manifest filled as %q (%v)", b, err)
	}
	// The step text stays a template: the server fills it with the cluster.
	if got := s.Steps[0].Body["en"]; !strings.Contains(got, "{{ .Values.app }}") {
		t.Errorf("step text was filled at For: %q", got)
	}
	text, err := Render("t", s.Steps[0].Body["en"], TemplateData{Values: s.Vals})
	if err != nil || text != "Scale "+vals["app"]+" to "+vals["replicas"]+"." {
		t.Errorf("step text renders as %q (%v)", text, err)
	}
	// The lab itself is untouched: another session fills it with its own.
	if got := *lab.Steps[0].Checks[0].Expect.Equals; !strings.Contains(got, "{{") {
		t.Errorf("For changed the lab: %q", got)
	}
	other := lab.DrawOther(r, vals)
	for _, name := range []string{"replicas", "app", "cpu"} {
		if other[name] == vals[name] {
			t.Errorf("DrawOther kept %s = %q", name, vals[name])
		}
	}
}

// Over many draws every choice comes up: a value is not stuck on one.
func TestDrawCoversTheChoices(t *testing.T) {
	lab, ps := valuesLab(t)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	seen := map[string]bool{}
	r := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 200; i++ {
		seen[lab.Draw(r)["replicas"]] = true
	}
	if len(seen) != 4 {
		t.Errorf("replicas took %v over 200 draws, want all of 2..5", seen)
	}
}

func TestValueProblems(t *testing.T) {
	cases := []struct {
		name  string
		edits []string
		want  want
	}{
		{"undeclared value", []string{`"{{ .Values.app }}-{{ mul`, `"{{ .Values.ap }}-{{ mul`},
			want{24, "steps[0].checks[0].expect.equals", `no value "ap" is declared under values:`}},
		{"broken template", []string{"--replicas={{ .Values.replicas }}", "--replicas={{ .Values.replicas }"},
			want{29, "steps[0].solve[0].run", "unexpected"}},
		{"one choice", []string{`oneOf: ["200", "300"]`, `oneOf: ["200"]`},
			want{9, "values[2]", "can take only one value"}},
		{"two kinds", []string{"word: 6}", "word: 6, oneOf: [a, b]}"},
			want{8, "values[1]", "has oneOf and word; give it only one"}},
		{"bad name", []string{"name: app,", "name: my-app,"},
			want{8, "values[1].name", `value name "my-app" must be`}},
		{"min above max", []string{"min: 2, max: 5", "min: 5, max: 2"},
			want{7, "values[0].int", "min 5 must be below max 2"}},
		{"arithmetic on a word", []string{"mul .Values.cpu 100", "mul .Values.app 100"},
			want{24, "steps[0].checks[0].expect.equals", "is not a whole number"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lab, ps := valuesLab(t, c.edits...)
			if lab != nil {
				t.Fatal("the lab loaded")
			}
			if !c.want.in(ps) {
				t.Errorf("missing %v in:\n%v", c.want, ps)
			}
		})
	}
}

// A manifest that names an undeclared value is reported on its file.
func TestManifestValueProblem(t *testing.T) {
	y := edit(t, validLab, "cluster:\n", "values:\n  - {name: app, word: 6}\ncluster:\n")
	fs := labFS(y)
	fs["lab/manifests/pod.yaml"].Data = []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: \"{{ .Values.nope }}\"}\n")
	_, ps := Load(fs, "lab", bothLanguages)
	found := false
	for _, p := range ps {
		if strings.HasSuffix(p.File, "manifests/pod.yaml") && strings.Contains(p.Message, `no value "nope" is declared`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no problem on the manifest: %v", ps)
	}
}
