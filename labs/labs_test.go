package labs

import (
	"strings"
	"testing"
	"testing/fstest"
)

const validLab = `id: sample
title: {en: Sample, zh: 示例}
summary: {en: A sample lab, zh: 示例实验}
level: beginner
minutes: 5
cluster:
  workers: 1
setup:
  - apply: manifests/pod.yaml
steps:
  - id: first
    title: {en: First, zh: 第一步}
    layers: [kubelet]
    checks:
      - name: {en: The pod runs, zh: Pod 在运行}
        probe:
          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}
        expect: {equals: Running}
        within: 30s
        hints: [{en: Which object records the pod, zh: 哪个对象记录了这个 Pod},
          {en: Look at the pod, zh: 看看 Pod}]
    solve:
      - run: kubectl get pods
        node: controlplane
  - id: second
    title: {en: Second, zh: 第二步}
    layers: [containerd]
    checks:
      - name: {en: crictl lists it, zh: crictl 列出了它}
        probe:
          crictl: {node: node01, command: "ps -o json", jsonpath: "{.containers[*].id}"}
        expect: {nonEmpty: true}
        hints: [{en: Ask containerd on the node, zh: 去节点上问 containerd},
          {en: Use crictl, zh: 用 crictl}]
    solve:
      - run: "true"
        node: node01
`

func labFS(yaml string, drop ...string) fstest.MapFS {
	fs := fstest.MapFS{
		"lab/lab.yaml":             {Data: []byte(yaml)},
		"lab/manifests/pod.yaml":   {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec: {containers: [{name: c, image: x}]}\n")},
		"lab/steps/first.en.md":    {Data: []byte("Run on {{ .Nodes.node01 }}.")},
		"lab/steps/first.zh.md":    {Data: []byte("在 {{ .Nodes.node01 }} 上运行。")},
		"lab/steps/second.en.md":   {Data: []byte("Second.")},
		"lab/steps/second.zh.md":   {Data: []byte("第二步。")},
		"lab/intro.en.md":          {Data: []byte("Intro.")},
		"other/lab.yaml":           {Data: []byte(strings.Replace(validLab, "id: sample", "id: other", 1))},
		"other/manifests/pod.yaml": {Data: []byte("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\n")},
		"other/steps/first.en.md":  {Data: []byte("x")},
		"other/steps/first.zh.md":  {Data: []byte("x")},
		"other/steps/second.en.md": {Data: []byte("x")},
		"other/steps/second.zh.md": {Data: []byte("x")},
	}
	for _, d := range drop {
		delete(fs, d)
	}
	return fs
}

var bothLanguages = LoadOptions{Languages: Languages}

func TestValidLab(t *testing.T) {
	lab, ps := Load(labFS(validLab), "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("valid lab has problems:\n%v", ps)
	}
	if lab.ID != "sample" || len(lab.Steps) != 2 || lab.Steps[0].Checks[0].Within.D().Seconds() != 30 {
		t.Errorf("parsed lab: %+v", lab)
	}
	if lab.Steps[0].Body["zh"] == "" || lab.Intro["en"] != "Intro." {
		t.Errorf("step text or intro not read: %+v %+v", lab.Steps[0].Body, lab.Intro)
	}
	out, err := Render("x", lab.Steps[0].Body["en"], TemplateData{Nodes: map[string]string{"node01": "node01"}})
	if err != nil || out != "Run on node01." {
		t.Errorf("render: %q %v", out, err)
	}
}

// Each broken lab must be rejected with a message that says where and what
// to fix.
func TestBrokenLabs(t *testing.T) {
	cases := []struct {
		name    string
		yaml    string
		drop    []string
		file    string // problem file suffix
		line    int
		message string
	}{
		{name: "unknown probe", yaml: strings.Replace(validLab, "kube: {resource: pods", "shell: {resource: pods", 1),
			file: "lab/lab.yaml", line: 17, message: `unknown probe "shell"; a probe is one of kube,`},
		{name: "missing markdown", yaml: validLab, drop: []string{"lab/steps/second.zh.md"},
			file: "lab/lab.yaml", line: 25, message: "missing Markdown file steps/second.zh.md for step second"},
		{name: "duplicate step id", yaml: strings.Replace(validLab, "id: second", "id: first", 1),
			file: "lab/lab.yaml", line: 25, message: `duplicate step id "first" (first used by step 1 at line 11)`},
		{name: "solve on unknown node", yaml: strings.Replace(validLab, "        node: node01\n", "        node: node02\n", 1),
			file: "lab/lab.yaml", line: 37, message: `unknown node "node02": this lab's cluster has controlplane, node01`},
		{name: "probe on unknown node", yaml: strings.Replace(validLab, "crictl: {node: node01", "crictl: {node: worker1", 1),
			file: "lab/lab.yaml", line: 31, message: `unknown node "worker1"`},
		{name: "unknown field", yaml: strings.Replace(validLab, "    layers: [kubelet]\n", "    layers: [kubelet]\n    color: red\n", 1),
			file: "lab/lab.yaml", line: 14, message: `unknown field "color" in a step`},
		{name: "bad duration", yaml: strings.Replace(validLab, "within: 30s", "within: soon", 1),
			file: "lab/lab.yaml", line: 19, message: "`within` wants a duration like 30s or 2m, got \"soon\""},
		{name: "missing manifest", yaml: strings.Replace(validLab, "apply: manifests/pod.yaml", "apply: manifests/nope.yaml", 1),
			file: "lab/lab.yaml", line: 9, message: "apply names manifests/nope.yaml, which is not in the lab folder"},
		{name: "no hints", yaml: strings.Replace(validLab, "        hints: [{en: Ask containerd on the node, zh: 去节点上问 containerd},\n          {en: Use crictl, zh: 用 crictl}]\n", "", 1),
			file: "lab/lab.yaml", line: 29, message: "a check needs hints"},
		{name: "bad jsonpath", yaml: strings.Replace(validLab, `jsonpath: "{.status.phase}"`, `jsonpath: "{.status.phase"`, 1),
			file: "lab/lab.yaml", line: 17, message: `jsonpath "{.status.phase" does not parse`},
		{name: "no matcher", yaml: strings.Replace(validLab, "        expect: {nonEmpty: true}\n", "", 1),
			file: "lab/lab.yaml", line: 29, message: "a check needs expect:"},
		{name: "two probes", yaml: strings.Replace(validLab, `          kube: {resource: pods, name: web, jsonpath: "{.status.phase}"}`, "          kube: {resource: pods, name: web, jsonpath: \"{.status.phase}\"}\n          unit: {node: node01, unit: kubelet}", 1),
			file: "lab/lab.yaml", line: 17, message: "a probe sets kube and unit; set exactly one"},
		{name: "unknown layer", yaml: strings.Replace(validLab, "layers: [containerd]", "layers: [docker]", 1),
			file: "lab/lab.yaml", line: 27, message: `unknown layer "docker"`},
		{name: "no chinese title", yaml: strings.Replace(validLab, "title: {en: Second, zh: 第二步}", "title: {en: Second}", 1),
			file: "lab/lab.yaml", line: 26, message: "step second title needs a Chinese text (zh: ...)"},
		{name: "bad level", yaml: strings.Replace(validLab, "level: beginner", "level: expert", 1),
			file: "lab/lab.yaml", line: 4, message: `level "expert" must be one of beginner, intermediate, advanced`},
		{name: "yaml syntax", yaml: strings.Replace(validLab, "minutes: 5", "minutes: [5", 1),
			file: "lab/lab.yaml", message: "did not find expected"},
		{name: "no solve", yaml: strings.Replace(validLab, "    solve:\n      - run: \"true\"\n        node: node01\n", "", 1),
			file: "lab/lab.yaml", line: 25, message: "step second has no solve actions"},
		{name: "shared without cleanup", yaml: strings.Replace(validLab, "  workers: 1\n", "  workers: 1\n  shared: true\n", 1),
			file: "lab/lab.yaml", line: 8, message: "a shared lab must have cleanup actions"},
		{name: "bad template", yaml: validLab, drop: []string{"lab/steps/first.en.md"},
			file: "lab/lab.yaml", message: "missing Markdown file steps/first.en.md"},
		{name: "script with expect", yaml: strings.Replace(validLab, `          crictl: {node: node01, command: "ps -o json", jsonpath: "{.containers[*].id}"}`, `          script: {node: node01, script: "exit 0"}`, 1),
			file: "lab/lab.yaml", line: 32, message: "a script check passes when its script exits 0; remove expect"},
		{name: "bad regexp", yaml: strings.Replace(validLab, "expect: {nonEmpty: true}", `expect: {matches: "(unclosed"}`, 1),
			file: "lab/lab.yaml", line: 32, message: `matches "(unclosed" is not a regular expression`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lab, ps := Load(labFS(c.yaml, c.drop...), "lab", bothLanguages)
			if lab != nil || len(ps) == 0 {
				t.Fatalf("broken lab accepted")
			}
			for _, p := range ps {
				if strings.HasSuffix(p.File, c.file) && strings.Contains(p.Message, c.message) && (c.line == 0 || p.Line == c.line) {
					return
				}
			}
			t.Errorf("no problem %s:%d %q in:\n%v", c.file, c.line, c.message, ps)
		})
	}
}

func TestTemplateProblems(t *testing.T) {
	fs := labFS(validLab)
	fs["lab/steps/second.en.md"] = &fstest.MapFile{Data: []byte("line one\n{{ .Nodes.node07 }} and {{ .Nope }}")}
	_, ps := Load(fs, "lab", bothLanguages)
	found := false
	for _, p := range ps {
		if strings.HasSuffix(p.File, "lab/steps/second.en.md") && strings.Contains(p.Message, "template:") {
			found = true
		}
	}
	if !found {
		t.Errorf("a step text naming a missing node was accepted: %v", ps)
	}
}

func TestLoadAllRejectsDuplicateIDs(t *testing.T) {
	fs := labFS(validLab)
	fs["other/lab.yaml"] = &fstest.MapFile{Data: []byte(validLab)}
	labs, ps := LoadAll(fs, ".", bothLanguages)
	if len(labs) != 1 || len(ps) != 1 || !strings.Contains(ps[0].Message, `lab id "sample" is already used`) {
		t.Errorf("duplicate ids: %d labs, problems %v", len(labs), ps)
	}
}

func TestBuiltinLabsValidate(t *testing.T) {
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatalf("built-in labs have problems:\n%v", ps)
	}
	if len(all) == 0 {
		t.Fatal("no built-in labs")
	}
	for i, l := range all {
		if l.Order != i+1 {
			t.Errorf("lab %s has order %d, want %d (labs are numbered in track order)", l.ID, l.Order, i+1)
		}
		for _, lang := range Languages {
			if n := len(l.Takeaways.Lines(lang)); n < 2 || n > 3 {
				t.Errorf("lab %s has %d takeaways in %s, want two or three", l.ID, n, lang)
			}
		}
		for _, s := range l.Steps {
			for _, lang := range Languages {
				if s.Body[lang] == "" {
					t.Errorf("%s/%s has no %s text", l.ID, s.ID, lang)
				}
			}
		}
	}
}

// Takeaways are required where the load says so (the built-in labs), in
// every language it asks for, and kept short.
func TestTakeaways(t *testing.T) {
	required := LoadOptions{Languages: Languages, RequireTakeaways: true}
	if _, ps := Load(labFS(validLab), "lab", bothLanguages); len(ps) > 0 {
		t.Fatalf("a lab without takeaways is refused where they are optional:\n%v", ps)
	}
	_, ps := Load(labFS(validLab), "lab", required)
	if len(ps) != 1 || ps[0].Field != "takeaways" || !strings.Contains(ps[0].Message, "needs takeaways") {
		t.Errorf("a built-in lab without takeaways: %v", ps)
	}
	with := func(takeaways string) string {
		return strings.Replace(validLab, "level: beginner\n", takeaways+"level: beginner\n", 1)
	}
	lab, ps := Load(labFS(with("takeaways:\n  en: |-\n    One.\n    Two.\n  zh: |-\n    一。\n    二。\n")), "lab", required)
	if len(ps) > 0 {
		t.Fatalf("two takeaways in both languages: %v", ps)
	}
	if got := lab.Takeaways.Lines("zh"); len(got) != 2 || got[1] != "二。" {
		t.Errorf("zh takeaways read as %q", got)
	}
	for name, c := range map[string]struct{ yaml, field, message string }{
		"no chinese":       {"takeaways: {en: One.}\n", "takeaways", "takeaways needs a Chinese text"},
		"four lines":       {"takeaways:\n  en: |-\n    1\n    2\n    3\n    4\n  zh: 一\n", "takeaways.en", "takeaways has 4 lines in English; keep to 3 at most"},
		"unknown language": {"takeaways: {en: One., zh: 一, fr: Un.}\n", "takeaways", `takeaways has a text in "fr"`},
	} {
		_, ps := Load(labFS(with(c.yaml)), "lab", required)
		found := false
		for _, p := range ps {
			found = found || (p.Field == c.field && strings.Contains(p.Message, c.message))
		}
		if !found {
			t.Errorf("%s: no problem at %s saying %q in %v", name, c.field, c.message, ps)
		}
	}
}
