// Package labs loads and validates labs: a folder with lab.yaml and one
// Markdown file per step and language. The built-in labs are embedded; an
// operator's own folder can be added. It knows nothing of clusters, HTTP or
// Postgres: the grader runs what a lab describes.
package labs

import (
	"fmt"
	"io/fs"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Languages every text may be in; English is required, and every built-in
// lab has Chinese too.
var Languages = []string{"en", "zh"}

// Text is a string in several languages, keyed by language code.
type Text map[string]string

// In returns the text in lang, or in English when lang is missing.
func (t Text) In(lang string) string {
	if s, ok := t[lang]; ok && s != "" {
		return s
	}
	return t["en"]
}

// Lines returns the text in lang cut into its non-empty lines, trimmed.
func (t Text) Lines(lang string) []string {
	var out []string
	for _, line := range strings.Split(t.In(lang), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// Layers of a Pod's path a step can touch, in path order. The lab page's
// diagram highlights the ones the current step names.
var Layers = []string{"apiserver", "etcd", "scheduler", "controller-manager", "kubelet", "containerd", "cni", "runc", "kernel", "kube-proxy"}

// Lab is one lab: a cluster shape, setup, and steps.
type Lab struct {
	ID      string `yaml:"id" json:"id"`
	Title   Text   `yaml:"title" json:"title"`
	Summary Text   `yaml:"summary" json:"summary"`
	// Takeaways are what the learner should leave with, one per line (two
	// or three), shown at the lab's end. Built-in labs must have them.
	Takeaways Text `yaml:"takeaways,omitempty" json:"takeaways,omitempty"`
	// Challenge makes the lab a troubleshooting challenge: it starts in
	// challenge mode only, and its texts give a goal, not a recipe (labs
	// validate refuses a command block in them; hints may name commands).
	Challenge bool   `yaml:"challenge,omitempty" json:"challenge,omitempty"`
	Level     string `yaml:"level" json:"level"`
	Minutes   int    `yaml:"minutes" json:"minutes"`
	// Order places the lab in the track; labs sort by it.
	Order   int     `yaml:"order" json:"order"`
	Cluster Cluster `yaml:"cluster" json:"cluster"`
	// Values are drawn for each session and fill {{ .Values.name }} in
	// the lab's files (see Lab.For).
	Values []Value  `yaml:"values,omitempty" json:"-"`
	Setup  []Action `yaml:"setup,omitempty" json:"-"`
	// Cleanup undoes what the lab did, for labs that share a cluster in
	// `podpath labs test`.
	Cleanup []Action `yaml:"cleanup,omitempty" json:"-"`
	Steps   []Step   `yaml:"steps" json:"steps"`

	// Dir is the lab's folder in FS; Files reads its manifests and Markdown.
	Dir   string   `yaml:"-" json:"-"`
	Files FileFunc `yaml:"-" json:"-"`
	// shared are the images a Killercoda scenario's texts show from above
	// its folder, by their paths in sharedFS, its repository (SharedImage).
	shared   map[string]bool
	sharedFS fs.FS
	// Intro is the Markdown shown before the first step, by language.
	Intro Text `yaml:"-" json:"-"`
	// Vals are the values this copy of the lab was filled with (For).
	Vals Values `yaml:"-" json:"-"`
	// Warnings are the lints the lab loaded with (see LoadOptions.Strict).
	Warnings Problems `yaml:"-" json:"-"`
	// Verbatim texts are not Go templates: a Killercoda scenario's text
	// holds Helm's and kubectl's own {{ }} (killercoda.go).
	Verbatim bool `yaml:"-" json:"-"`
	// Killercoda marks a lab loaded from a Killercoda scenario's index.json.
	Killercoda bool `yaml:"-" json:"-"`
	// Finish is Markdown shown at the lab's end, above the takeaways, by
	// language (a Killercoda scenario's finish text).
	Finish Text `yaml:"-" json:"-"`
}

// Render fills Markdown md of the lab with data; a verbatim lab's text is
// returned as it is but for Killercoda's traffic links.
func (l *Lab) Render(md string, data TemplateData) (string, error) {
	if l.Verbatim {
		return kcTraffic(md, data), nil
	}
	return Render(l.ID, md, data)
}

// FileFunc reads a file of a lab by its path inside the lab folder.
type FileFunc func(name string) ([]byte, error)

// Cluster is the shape of the sandbox a lab runs on.
type Cluster struct {
	Workers int `yaml:"workers" json:"workers"`
	// Worker is what each worker node must be able to use, for a lab whose
	// workloads need more than a default node (the eviction lab fills
	// node01's memory). The Docker backend's nodes have no limits and
	// ignore it; the Kubernetes backend sizes each worker Pod at the larger
	// of its default and this, and the capacity model counts that.
	Worker NodeSize `yaml:"worker,omitempty" json:"worker,omitempty"`
	// Shared says the lab leaves the cluster as it found it once its
	// cleanup has run, so `podpath labs test` may run it on a cluster that
	// other shared labs use too.
	Shared bool `yaml:"shared" json:"shared"`
}

// Step is one step of a lab.
type Step struct {
	ID     string   `yaml:"id" json:"id"`
	Title  Text     `yaml:"title" json:"title"`
	Layers []string `yaml:"layers" json:"layers"`
	// NoSkip forbids skipping the step (running its solve from the page).
	NoSkip bool `yaml:"noSkip,omitempty" json:"noSkip,omitempty"`
	// Answer labels the input box when a check reads the learner's answer.
	Answer Text     `yaml:"answer,omitempty" json:"answer,omitempty"`
	Checks []Check  `yaml:"checks" json:"checks"`
	Solve  []Action `yaml:"solve" json:"-"`
	// Start runs on the cluster when the step begins: when the step before
	// it is done (a Killercoda step's background script). The first
	// step's is part of the lab's setup instead.
	Start []Action `yaml:"-" json:"-"`
	// Unverified marks a step nothing verifies (a Killercoda step with no
	// verify script): its one check always passes, and labs test reports
	// it as not testable rather than passed.
	Unverified bool `yaml:"-" json:"unverified,omitempty"`
	// Body is the step's Markdown by language, read from steps/<id>.<lang>.md.
	Body Text `yaml:"-" json:"-"`
}

// NeedsAnswer reports whether a check of the step reads the learner's
// answer, in its probe, its matcher or any condition of allOf, anyOf, not.
func (s *Step) NeedsAnswer() bool {
	for i := range s.Checks {
		for _, c := range s.Checks[i].Conditions() {
			e := &c.Expect
			if c.Probe.Answer != nil || (e.SameAs != nil && e.SameAs.Answer != nil) || (e.DiffersFrom != nil && e.DiffersFrom.Answer != nil) {
				return true
			}
		}
	}
	return false
}

// Check is a probe that reads real state, a matcher that judges it, and
// hints shown when it fails. Instead of probe and expect, a check may judge
// exactly one of AllOf, AnyOf and Not: conditions (see Condition).
type Check struct {
	Name   Text    `yaml:"name" json:"name"`
	Probe  Probe   `yaml:"probe" json:"-"`
	Expect Matcher `yaml:"expect,omitempty" json:"-"`
	// AllOf passes when every condition passes, AnyOf when one does, Not
	// when its condition reads a value that its matcher rejects.
	AllOf []Condition `yaml:"allOf,omitempty" json:"-"`
	AnyOf []Condition `yaml:"anyOf,omitempty" json:"-"`
	Not   *Condition  `yaml:"not,omitempty" json:"-"`
	// Observed says how the probe's value reads to a learner (see
	// Reading); a combined check gives each condition its own.
	Observed []Reading `yaml:"observed,omitempty" json:"-"`
	// Within polls the check until it passes or this time is up.
	Within Duration `yaml:"within,omitempty" json:"-"`
	// Holds requires the check to keep passing for this long.
	Holds Duration `yaml:"holds,omitempty" json:"-"`
	// Timeout bounds one reading of the probe; DefaultTimeout when zero.
	Timeout Duration `yaml:"timeout,omitempty" json:"-"`
	// Hints are shown one more per failed attempt, so the first failure
	// nudges and later ones say more.
	Hints []Text `yaml:"hints" json:"-"`
}

// DefaultTimeout bounds one probe reading.
const DefaultTimeout = 20 * time.Second

// Probe reads one value from the cluster or a node. Exactly one field is set.
type Probe struct {
	Kube          *KubeProbe          `yaml:"kube,omitempty"`
	NodeCondition *NodeConditionProbe `yaml:"nodeCondition,omitempty"`
	Events        *EventsProbe        `yaml:"events,omitempty"`
	Command       *CommandProbe       `yaml:"command,omitempty"`
	File          *FileProbe          `yaml:"file,omitempty"`
	Crictl        *CrictlProbe        `yaml:"crictl,omitempty"`
	Unit          *UnitProbe          `yaml:"unit,omitempty"`
	History       *HistoryProbe       `yaml:"history,omitempty"`
	Answer        *AnswerProbe        `yaml:"answer,omitempty"`
	// Script is the escape hatch: it passes when it exits 0, and its lines
	// starting "FAIL:" are the feedback. A script check has no expect.
	Script *ScriptProbe `yaml:"script,omitempty"`
}

// Kind names the probe's one set field.
func (p *Probe) Kind() string {
	kinds := p.kinds()
	if len(kinds) == 1 {
		return kinds[0]
	}
	return ""
}

func (p *Probe) kinds() []string {
	var k []string
	add := func(set bool, name string) {
		if set {
			k = append(k, name)
		}
	}
	add(p.Kube != nil, "kube")
	add(p.NodeCondition != nil, "nodeCondition")
	add(p.Events != nil, "events")
	add(p.Command != nil, "command")
	add(p.File != nil, "file")
	add(p.Crictl != nil, "crictl")
	add(p.Unit != nil, "unit")
	add(p.History != nil, "history")
	add(p.Answer != nil, "answer")
	add(p.Script != nil, "script")
	return k
}

// ProbeKinds lists every probe a check may use.
var ProbeKinds = []string{"kube", "nodeCondition", "events", "command", "file", "crictl", "unit", "history", "answer", "script"}

// Node returns the node a probe runs on, if it runs on one.
func (p *Probe) Node() string {
	switch {
	case p.Command != nil:
		return p.Command.Node
	case p.File != nil:
		return p.File.Node
	case p.Crictl != nil:
		return p.Crictl.Node
	case p.Unit != nil:
		return p.Unit.Node
	case p.History != nil:
		return p.History.Node
	case p.Script != nil:
		return p.Script.Node
	case p.NodeCondition != nil:
		return p.NodeCondition.Node
	}
	return ""
}

// KubeProbe reads an object (name set) or a list (name empty, optionally
// filtered by selectors) and prints it through a JSONPath template.
type KubeProbe struct {
	// Resource is a resource name as kubectl takes it: pods, nodes,
	// deployments, deployments.apps, svc, ...
	Resource      string `yaml:"resource"`
	Namespace     string `yaml:"namespace,omitempty"`
	Name          string `yaml:"name,omitempty"`
	Selector      string `yaml:"selector,omitempty"`
	FieldSelector string `yaml:"fieldSelector,omitempty"`
	// JSONPath as kubectl -o jsonpath takes it, e.g. {.spec.nodeName}.
	JSONPath string `yaml:"jsonpath"`
}

// NodeConditionProbe reads the status (True, False, Unknown) of a Node condition.
type NodeConditionProbe struct {
	Node string `yaml:"node"`
	Type string `yaml:"type"`
}

// EventsProbe lists the events of an object in time order, one line each.
type EventsProbe struct {
	Namespace string `yaml:"namespace,omitempty"`
	// Kind and Name of the involved object; Name may be a prefix ending in *.
	Kind string `yaml:"kind"`
	Name string `yaml:"name"`
	// Reason keeps only events with this reason.
	Reason string `yaml:"reason,omitempty"`
	// Field is what each line shows: reason (default), component (the
	// source that wrote it: default-scheduler, kubelet), message, or
	// "reason component".
	Field string `yaml:"field,omitempty"`
	// Pick "latest" keeps only the newest event (by when it was last seen).
	Pick string `yaml:"pick,omitempty"`
	// UID keeps only the events of the object with this UID.
	UID string `yaml:"uid,omitempty"`
	// UIDOf keeps only the events of the object that exists now, found by
	// UIDOf's name: not those of a deleted object of the same name.
	UIDOf *ObjectRef `yaml:"uidOf,omitempty"`
}

// ObjectRef names an object as a kube probe does. Namespace and Name
// default to the events probe's own.
type ObjectRef struct {
	Resource  string `yaml:"resource"`
	Namespace string `yaml:"namespace,omitempty"`
	Name      string `yaml:"name,omitempty"`
}

// CommandProbe runs a shell command on a node.
type CommandProbe struct {
	Node string `yaml:"node"`
	Run  string `yaml:"run"`
	// Output is stdout (default) or exitCode.
	Output string `yaml:"output,omitempty"`
}

// FileProbe reads a file on a node.
type FileProbe struct {
	Node string `yaml:"node"`
	Path string `yaml:"path"`
}

// CrictlProbe runs crictl on a node and reads its JSON output through a
// JSONPath. Command is crictl's arguments, shell syntax allowed, such as
// inspect $(crictl ps -q --name '^nginx$').
type CrictlProbe struct {
	Node     string `yaml:"node"`
	Command  string `yaml:"command"`
	JSONPath string `yaml:"jsonpath"`
}

// UnitProbe reads a systemd unit's active state (active, inactive, failed, ...).
type UnitProbe struct {
	Node string `yaml:"node"`
	Unit string `yaml:"unit"`
}

// HistoryProbe returns the commands the learner ran in their shell on a node
// that match a regular expression, one per line.
type HistoryProbe struct {
	Node    string `yaml:"node"`
	Matches string `yaml:"matches"`
}

// AnswerProbe is the learner's typed answer.
type AnswerProbe struct{}

// ScriptProbe runs a shell script on a node.
type ScriptProbe struct {
	Node   string `yaml:"node"`
	Script string `yaml:"script"`
	// Feedback is which output is shown when the script fails: its
	// "FAIL:" lines (the default), or FeedbackOutput, the last lines of
	// everything it printed (a Killercoda verify script's way).
	Feedback string `yaml:"-"`
}

// FeedbackOutput makes a script's whole output its feedback.
const FeedbackOutput = "output"

// Matcher judges a probe's value. Exactly one of the comparisons is set.
type Matcher struct {
	Equals      *string  `yaml:"equals,omitempty"`
	NotEquals   *string  `yaml:"notEquals,omitempty"`
	Matches     string   `yaml:"matches,omitempty"`
	Contains    string   `yaml:"contains,omitempty"`
	NotContains string   `yaml:"notContains,omitempty"`
	Empty       bool     `yaml:"empty,omitempty"`
	NonEmpty    bool     `yaml:"nonEmpty,omitempty"`
	GT          *float64 `yaml:"gt,omitempty"`
	GE          *float64 `yaml:"ge,omitempty"`
	LT          *float64 `yaml:"lt,omitempty"`
	LE          *float64 `yaml:"le,omitempty"`
	// GT, GE, LT and LE compare numbers; the value read may be a
	// Kubernetes quantity (250m, 128Mi), compared as the number it is.
	// Quantity passes when the value read is the same Kubernetes quantity:
	// 128Mi accepts 134217728, 128Mi and 0.125Gi.
	Quantity string `yaml:"quantity,omitempty"`
	// Count applies a matcher to the number of whitespace-separated values.
	Count *Matcher `yaml:"count,omitempty"`
	// SameAs and DiffersFrom compare with the value of another probe.
	SameAs      *Probe `yaml:"sameAs,omitempty"`
	DiffersFrom *Probe `yaml:"differsFrom,omitempty"`
	// MinPrefix lets sameAs accept a prefix of the other value at least
	// this long (container IDs are often typed short).
	MinPrefix int `yaml:"minPrefix,omitempty"`
	// IgnoreCase compares equals, contains and sameAs without case.
	IgnoreCase bool `yaml:"ignoreCase,omitempty"`
}

// Kind names the matcher's comparison.
func (m *Matcher) Kind() string {
	k := m.kinds()
	if len(k) == 1 {
		return k[0]
	}
	return ""
}

func (m *Matcher) kinds() []string {
	var k []string
	add := func(set bool, name string) {
		if set {
			k = append(k, name)
		}
	}
	add(m.Equals != nil, "equals")
	add(m.NotEquals != nil, "notEquals")
	add(m.Matches != "", "matches")
	add(m.Contains != "", "contains")
	add(m.NotContains != "", "notContains")
	add(m.Empty, "empty")
	add(m.NonEmpty, "nonEmpty")
	add(m.GT != nil, "gt")
	add(m.GE != nil, "ge")
	add(m.LT != nil, "lt")
	add(m.LE != nil, "le")
	add(m.Quantity != "", "quantity")
	add(m.Count != nil, "count")
	add(m.SameAs != nil, "sameAs")
	add(m.DiffersFrom != nil, "differsFrom")
	return k
}

// Action is one setup, cleanup or solve action. Exactly one of Apply,
// Delete, Copy, Run, Wait and Answer is set.
type Action struct {
	// Apply runs kubectl apply on the control plane with a manifest from
	// the lab folder; Delete runs kubectl delete --ignore-not-found with one.
	Apply  string `yaml:"apply,omitempty"`
	Delete string `yaml:"delete,omitempty"`
	// Copy writes a file of the lab folder to path To on Node.
	Copy string `yaml:"copy,omitempty"`
	To   string `yaml:"to,omitempty"`
	// Run is a shell command on Node (controlplane when empty); it must
	// exit 0 unless AllowFail.
	Run       string `yaml:"run,omitempty"`
	Node      string `yaml:"node,omitempty"`
	AllowFail bool   `yaml:"allowFail,omitempty"`
	// Wait polls a check until it passes or its timeout is up.
	Wait *WaitAction `yaml:"wait,omitempty"`
	// Answer (solve only) submits the value of a probe as the answer.
	Answer *Probe `yaml:"answer,omitempty"`
}

// WaitAction waits for a probe to satisfy a matcher.
type WaitAction struct {
	Probe   Probe    `yaml:"probe"`
	Expect  Matcher  `yaml:"expect"`
	Timeout Duration `yaml:"timeout"`
}

// Kind names the action's one set field.
func (a *Action) Kind() string {
	var k []string
	if a.Apply != "" {
		k = append(k, "apply")
	}
	if a.Delete != "" {
		k = append(k, "delete")
	}
	if a.Copy != "" {
		k = append(k, "copy")
	}
	if a.Run != "" {
		k = append(k, "run")
	}
	if a.Wait != nil {
		k = append(k, "wait")
	}
	if a.Answer != nil {
		k = append(k, "answer")
	}
	if len(k) == 1 {
		return k[0]
	}
	return ""
}

// Duration is a time.Duration written as in Go: 90s, 2m.
type Duration time.Duration

// UnmarshalText parses "90s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("invalid duration %q: write it like 30s or 2m", string(b))
	}
	if v < 0 {
		return fmt.Errorf("negative duration %q", string(b))
	}
	*d = Duration(v)
	return nil
}

// D returns the time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// NodeSize is a node's CPU and memory as Kubernetes writes them ("1",
// "500m"; "3Gi", "3072Mi"); empty: the backend's default.
type NodeSize struct {
	CPU    string `yaml:"cpu,omitempty" json:"cpu,omitempty"`
	Memory string `yaml:"memory,omitempty" json:"memory,omitempty"`
}

// Largest sizes a lab may ask of one node.
const (
	MaxNodeMilliCPU  = 16000
	MaxNodeMemoryMiB = 64 << 10
)

// Parse is the size in millicores and MiB (0 where empty), or what is
// wrong with it.
func (s NodeSize) Parse() (milliCPU, memoryMiB int64, err error) {
	if s.CPU != "" {
		q, perr := resource.ParseQuantity(s.CPU)
		if perr != nil || q.Sign() <= 0 {
			return 0, 0, fmt.Errorf("cpu %q is not a positive CPU amount: write cores (1, 1.5) or millicores (1500m)", s.CPU)
		}
		if milliCPU = q.MilliValue(); milliCPU > MaxNodeMilliCPU {
			return 0, 0, fmt.Errorf("cpu %q is more than a lab may ask of one node (%dm)", s.CPU, MaxNodeMilliCPU)
		}
	}
	if s.Memory != "" {
		q, perr := resource.ParseQuantity(s.Memory)
		if perr != nil || q.Sign() <= 0 {
			return 0, 0, fmt.Errorf("memory %q is not a positive memory amount: write it as Kubernetes does (3Gi, 3072Mi)", s.Memory)
		}
		if memoryMiB = q.Value() >> 20; memoryMiB > MaxNodeMemoryMiB {
			return 0, 0, fmt.Errorf("memory %q is more than a lab may ask of one node (%dGi)", s.Memory, MaxNodeMemoryMiB>>10)
		}
		if memoryMiB == 0 {
			return 0, 0, fmt.Errorf("memory %q is less than 1Mi: write it with a unit (3Gi, 3072Mi)", s.Memory)
		}
	}
	return milliCPU, memoryMiB, nil
}
