package labs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Problem is one thing wrong with a lab: where, and what to fix.
type Problem struct {
	File    string `json:"file"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Message)
	}
	return fmt.Sprintf("%s: %s", p.File, p.Message)
}

// Problems is a list of problems that is also an error.
type Problems []Problem

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
	// DisplayRoot prefixes file names in problems (the folder as the
	// user named it on the command line).
	DisplayRoot string
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
	var lab Lab
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&lab); err != nil {
		return nil, yamlProblems(display("lab.yaml"), err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(raw, &root)
	lab.Dir = dir
	lab.Files = func(name string) ([]byte, error) {
		clean := path.Clean(name)
		if path.IsAbs(clean) || strings.HasPrefix(clean, "..") {
			return nil, fmt.Errorf("%s is outside the lab folder", name)
		}
		return fs.ReadFile(fsys, path.Join(dir, clean))
	}
	v := &validator{lab: &lab, root: &root, file: display("lab.yaml"), langs: opts.Languages, display: display}
	v.validate()
	if len(v.problems) > 0 {
		return nil, v.problems
	}
	return &lab, nil
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

var yamlLineRE = regexp.MustCompile(`line (\d+): (.*)`)

// typeWords turn Go type names in yaml errors into the lab format's words.
var typeWords = map[string]string{
	"labs.Lab": "the lab", "labs.Step": "a step", "labs.Check": "a check", "labs.Probe": "a probe",
	"labs.Matcher": "expect", "labs.Action": "an action", "labs.Cluster": "cluster", "labs.WaitAction": "wait",
	"labs.KubeProbe": "a kube probe", "labs.CommandProbe": "a command probe", "labs.CrictlProbe": "a crictl probe",
	"labs.EventsProbe": "an events probe", "labs.FileProbe": "a file probe", "labs.UnitProbe": "a unit probe",
	"labs.HistoryProbe": "a history probe", "labs.ScriptProbe": "a script probe", "labs.NodeConditionProbe": "a nodeCondition probe",
	"labs.AnswerProbe": "an answer probe", "labs.Text": "a text",
}

var notFoundRE = regexp.MustCompile(`field (\S+) not found in type (\S+)`)

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
		if sub := notFoundRE.FindStringSubmatch(p.Message); sub != nil {
			switch sub[2] {
			case "labs.Probe":
				p.Message = fmt.Sprintf("unknown probe %q; a probe is one of %s", sub[1], strings.Join(ProbeKinds, ", "))
			case "labs.Matcher":
				p.Message = fmt.Sprintf("unknown matcher %q; expect takes one of equals, notEquals, matches, contains, notContains, empty, nonEmpty, gt, ge, lt, le, count, sameAs, differsFrom (with minPrefix, ignoreCase)", sub[1])
			case "labs.Action":
				p.Message = fmt.Sprintf("unknown action %q; an action is one of apply, delete, copy (with to, node), run (with node, allowFail), wait, answer", sub[1])
			default:
				what := typeWords[sub[2]]
				if what == "" {
					what = sub[2]
				}
				p.Message = fmt.Sprintf("unknown field %q in %s", sub[1], what)
			}
		}
		for goName, word := range typeWords {
			p.Message = strings.ReplaceAll(p.Message, "into "+goName, "into "+word)
		}
		ps = append(ps, p)
	}
	return ps
}

func errMessage(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// UnmarshalYAML parses "90s" and reports the line of a bad duration.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if err := d.UnmarshalText([]byte(n.Value)); err != nil {
		return fmt.Errorf("line %d: %v", n.Line, err)
	}
	return nil
}
