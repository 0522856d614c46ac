package labs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a lab: where, and what to fix.
type Problem struct {
	File string `json:"file"`
	Line int    `json:"line,omitempty"`
	// Field is the path of the field in lab.yaml, as Kubernetes writes
	// one: steps[1].checks[0].expect.ge.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
	// Warning marks a lint that fails a lab only when validation is
	// strict; a loaded lab keeps its warnings in Lab.Warnings.
	Warning bool `json:"warning,omitempty"`
	// Scenario marks a problem of a Killercoda scenario or course: that
	// scenario is left out and the others load (Problems.Fatal).
	Scenario bool `json:"scenario,omitempty"`
}

func (p Problem) String() string {
	s := p.File
	if p.Line > 0 {
		s += ":" + strconv.Itoa(p.Line)
	}
	s += ": "
	if p.Warning {
		s += "warning: "
	}
	s += p.Message
	if p.Field != "" {
		s += " (at " + p.Field + ")"
	}
	return s
}

// Problems is a list of problems that is also an error.
type Problems []Problem

// Fatal are the problems that stop a server from starting: those of
// podpath's own labs and tracks. A Killercoda scenario with problems is
// left out instead, as Killercoda does, and a warning is a warning.
func (ps Problems) Fatal() Problems {
	var out Problems
	for _, p := range ps {
		if !p.Warning && !p.Scenario {
			out = append(out, p)
		}
	}
	return out
}

func (ps Problems) Error() string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, "\n")
}

// LoadOptions tune validation.
type LoadOptions struct {
	// Languages every text and step must have; English when empty.
	Languages []string
	// RequireTakeaways makes takeaways a required field, as it is for the
	// built-in labs; other labs may leave it out.
	RequireTakeaways bool
	// DisplayRoot prefixes file names in problems (the folder as the
	// user named it on the command line).
	DisplayRoot string
	// Strict makes warnings problems: a lab with one does not load.
	Strict bool
}

// Load reads and validates the lab in folder dir of fsys. It returns the lab
// only when there are no problems.
func Load(fsys fs.FS, dir string, opts LoadOptions) (*Lab, Problems) {
	if len(opts.Languages) == 0 {
		opts.Languages = []string{"en"}
	}
	display := func(name string) string { return path.Join(opts.DisplayRoot, dir, name) }
	raw, err := fs.ReadFile(fsys, path.Join(dir, "lab.yaml"))
	if err != nil {
		return nil, Problems{{File: display("lab.yaml"), Message: "cannot read lab.yaml: " + errMessage(err) + "; every lab folder needs one"}}
	}
	file := display("lab.yaml")
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, yamlProblems(file, err)
	}
	if len(root.Content) == 0 {
		return nil, Problems{{File: file, Message: "lab.yaml is empty; a lab needs id, title, summary, level, minutes and steps"}}
	}
	lab, problems, broken, ok := decodeLab(&root, raw, file)
	if !ok {
		return nil, inLineOrder(problems, file)
	}
	lab.Dir = dir
	lab.Files = func(name string) ([]byte, error) {
		clean := path.Clean(name)
		if path.IsAbs(clean) || strings.HasPrefix(clean, "..") {
			return nil, fmt.Errorf("%s is outside the lab folder", name)
		}
		return fs.ReadFile(fsys, path.Join(dir, clean))
	}
	v := &validator{lab: lab, root: &root, file: file, langs: opts.Languages, requireTakeaways: opts.RequireTakeaways, display: display, broken: broken}
	v.validate()
	problems = append(problems, v.problems...)
	if opts.Strict {
		for _, w := range v.warnings {
			w.Warning = false
			problems = append(problems, w)
		}
	}
	if len(problems) > 0 {
		// A lab that fails shows its warnings too, so the author fixes
		// everything in one go.
		if !opts.Strict {
			problems = append(problems, v.warnings...)
		}
		return nil, inLineOrder(problems, file)
	}
	lab.Warnings = inLineOrder(v.warnings, file)
	return lab, nil
}

// inLineOrder sorts the problems of lab.yaml by line, before those of the
// lab's other files, which keep their order.
func inLineOrder(ps Problems, file string) Problems {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if (a.File == file) != (b.File == file) {
			return a.File == file
		}
		return a.File == file && a.Line < b.Line
	})
	return ps
}

// LoadAll loads every lab folder (a folder with a lab.yaml) directly under
// root, sorted by Order then ID. Two labs with one ID are a problem.
func LoadAll(fsys fs.FS, root string, opts LoadOptions) ([]*Lab, Problems) {
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, Problems{{File: path.Join(opts.DisplayRoot, root), Message: "cannot read the labs folder: " + errMessage(err)}}
	}
	var labs []*Lab
	var problems Problems
	seen := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := path.Join(root, e.Name())
		if _, err := fs.Stat(fsys, path.Join(dir, "lab.yaml")); err != nil {
			continue
		}
		lab, ps := Load(fsys, dir, opts)
		problems = append(problems, ps...)
		if lab == nil {
			continue
		}
		if first, ok := seen[lab.ID]; ok {
			problems = append(problems, Problem{File: path.Join(opts.DisplayRoot, dir, "lab.yaml"), Message: fmt.Sprintf("lab id %q is already used by %s; lab ids must be unique", lab.ID, first)})
			continue
		}
		seen[lab.ID] = path.Join(opts.DisplayRoot, dir)
		labs = append(labs, lab)
	}
	sort.SliceStable(labs, func(i, j int) bool {
		if labs[i].Order != labs[j].Order {
			return labs[i].Order < labs[j].Order
		}
		return labs[i].ID < labs[j].ID
	})
	return labs, problems
}

var yamlLineRE = regexp.MustCompile(`(?s)^line (\d+): (.*)`)

// typeWords turn Go type names in yaml errors into the lab format's words.
var typeWords = map[string]string{
	"labs.Lab": "the lab", "labs.Step": "a step", "labs.Check": "a check", "labs.Probe": "a probe",
	"labs.Matcher": "expect", "labs.Action": "an action", "labs.Cluster": "cluster", "labs.WaitAction": "wait",
	"labs.KubeProbe": "a kube probe", "labs.CommandProbe": "a command probe", "labs.CrictlProbe": "a crictl probe",
	"labs.EventsProbe": "an events probe", "labs.FileProbe": "a file probe", "labs.UnitProbe": "a unit probe",
	"labs.HistoryProbe": "a history probe", "labs.ScriptProbe": "a script probe", "labs.NodeConditionProbe": "a nodeCondition probe",
	"labs.AnswerProbe": "an answer probe", "labs.Value": "a value", "labs.IntRange": "int: {min, max}", "[]labs.Value": "a list", "labs.Condition": "a condition", "labs.ObjectRef": "uidOf", "labs.Text": "a text in each language", "labs.Duration": "a duration like 30s or 2m", "labs.Reading": "a reading", "[]labs.Reading": "a list of readings",
	"string": "a single value", "int": "a whole number", "float64": "a number", "bool": "true or false",
	"[]string": "a list", "[]labs.Step": "a list", "[]labs.Check": "a list", "[]labs.Action": "a list", "[]labs.Text": "a list", "[]labs.Condition": "a list",
}

// yamlTags name YAML's kinds of value in the lab format's words.
var yamlTags = map[string]string{"!!str": "a string", "!!int": "a number", "!!float": "a number", "!!bool": "true or false",
	"!!seq": "a list", "!!map": "a map", "!!null": "nothing", "!!timestamp": "a date"}

// syntaxHints say what usually causes a YAML syntax error.
var syntaxHints = map[string]string{
	"mapping values are not allowed in this context": `a value with ": " in it needs quotes`,
	"found character that cannot start any token":    "indent with spaces, not tabs, and quote a value that starts with @ or `",
	"did not find expected key":                      "check the indentation of this line and the ones above it",
}

// yamlProblems turns what the YAML decoder says into problems, for messages
// decodeLab cannot place on a field: syntax errors, mostly.
func yamlProblems(file string, err error) Problems {
	var te *yaml.TypeError
	var msgs []string
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var ps Problems
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		p := Problem{File: file, Message: m}
		if sub := yamlLineRE.FindStringSubmatch(m); sub != nil {
			p.Line, _ = strconv.Atoi(sub[1])
			p.Message = sub[2]
		}
		if sub := notFoundRE.FindStringSubmatch(m); sub != nil {
			if t, ok := labTypes[sub[3]]; ok {
				names, _ := yamlFields(t)
				p.Message = unknownFieldMessage(sub[2], t, closest(sub[2], names))
			} else {
				p.Message = fmt.Sprintf("unknown field %q", sub[2])
			}
		} else if sub := typeErrRE.FindStringSubmatch(m); sub != nil {
			want := typeWords[sub[3]]
			if want == "" {
				want = "another kind of value"
			}
			got := yamlTags[sub[2]]
			if got == "" {
				got = "a value tagged " + sub[2]
			}
			p.Message = fmt.Sprintf("a value here wants %s, got %s", want, got)
		}
		for msg, hint := range syntaxHints {
			if strings.Contains(p.Message, msg) {
				p.Message += "; " + hint
			}
		}
		ps = append(ps, p)
	}
	return ps
}

// labTypes are the structs of the lab format by their Go names.
var labTypes = map[string]reflect.Type{}

func init() {
	for _, t := range []reflect.Type{reflect.TypeFor[Lab](), reflect.TypeFor[Step](), reflect.TypeFor[Check](), reflect.TypeFor[Probe](),
		reflect.TypeFor[Matcher](), reflect.TypeFor[Action](), reflect.TypeFor[Cluster](), reflect.TypeFor[WaitAction](),
		reflect.TypeFor[KubeProbe](), reflect.TypeFor[NodeConditionProbe](), reflect.TypeFor[EventsProbe](), reflect.TypeFor[CommandProbe](),
		reflect.TypeFor[FileProbe](), reflect.TypeFor[CrictlProbe](), reflect.TypeFor[UnitProbe](), reflect.TypeFor[HistoryProbe](),
		reflect.TypeFor[AnswerProbe](), reflect.TypeFor[ScriptProbe](), reflect.TypeFor[Value](), reflect.TypeFor[IntRange](),
		reflect.TypeFor[Condition](), reflect.TypeFor[ObjectRef](), reflect.TypeFor[Reading]()} {
		labTypes[t.String()] = t
	}
}

func errMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// UnmarshalYAML parses "90s". A bad duration is a type error, as a bad
// number is, so that decoding goes on and reports the other mistakes too.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		if err := d.UnmarshalText([]byte(n.Value)); err == nil {
			return nil
		}
	}
	return yamlTypeError(n, durationType.String())
}
