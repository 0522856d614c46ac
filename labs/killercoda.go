package labs

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/podpath/podpath/internal/names"
)

// Killercoda scenarios (docs/KILLERCODA.md): a folder with an index.json is
// a scenario, and each loads as a lab with no conversion step. A
// structure.json lists a course's scenarios in order and becomes a track.

// ScenarioFile and StructureFile name Killercoda's two files.
const (
	ScenarioFile  = "index.json"
	StructureFile = "structure.json"
)

// kcScenario is index.json.
type kcScenario struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Difficulty  kcString `json:"difficulty"`
	Time        kcString `json:"time"`
	Details     struct {
		Intro  *kcPage  `json:"intro"`
		Steps  []kcPage `json:"steps"`
		Finish *kcPage  `json:"finish"`
		// Assets are files of the scenario's assets/ folder put on a
		// host before the scenario starts, by host: host01 is the
		// control plane.
		Assets map[string][]kcAsset `json:"assets"`
	} `json:"details"`
	Backend struct {
		ImageID string `json:"imageid"`
	} `json:"backend"`
}

// kcPage is the intro, a step or the finish. CourseData and Code are the
// Katacoda names of Background and Foreground.
type kcPage struct {
	Title      string `json:"title"`
	Text       string `json:"text"`
	Verify     string `json:"verify"`
	Background string `json:"background"`
	Foreground string `json:"foreground"`
	CourseData string `json:"courseData"`
	Code       string `json:"code"`
}

func (p *kcPage) background() string { return firstNonEmpty(p.Background, p.CourseData) }
func (p *kcPage) foreground() string { return firstNonEmpty(p.Foreground, p.Code) }

type kcAsset struct {
	File   string `json:"file"`
	Target string `json:"target"`
	Chmod  string `json:"chmod"`
}

// kcString takes a string or a number ("time": 15 as well as "15 minutes").
type kcString string

func (s *kcString) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = kcString(str)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("want a string or a number, not %s", b)
	}
	*s = kcString(n.String())
	return nil
}

// kcStructure is structure.json.
type kcStructure struct {
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Items       []kcItem `json:"items"`
}

// kcItem is a scenario or a course of a structure.json, by its path from
// the file's folder.
type kcItem struct {
	Path        string `json:"path"`
	Title       string `json:"title"`
	Description string `json:"description"`
}

// kcEnvRE reads a Killercoda Kubernetes environment: kubeadm (or k3s,
// which Killercoda itself now maps to kubeadm), one node or two, in any of
// its size, "rapid" (next Kubernetes version) and old Ubuntu variants.
var kcEnvRE = regexp.MustCompile(`^kubernetes-(?:kubeadm|k3s)-(1node|2nodes)(?:-4gb)?(?:-rapid)?(?:-ubuntu\d+\.\d+)?$`)

// kcWorkers maps backend.imageid to the cluster: kubernetes-kubeadm-1node
// is a control plane that schedules Pods (no worker), -2nodes has node01.
func kcWorkers(imageID string) (int, error) {
	id := strings.ToLower(strings.TrimSpace(imageID))
	if id == "" {
		return 0, errors.New("backend.imageid is missing: name the environment, such as kubernetes-kubeadm-1node or kubernetes-kubeadm-2nodes")
	}
	if m := kcEnvRE.FindStringSubmatch(id); m != nil {
		if m[1] == "2nodes" {
			return 1, nil
		}
		return 0, nil
	}
	// Katacoda's names, which Killercoda maps to its two-node cluster.
	if strings.HasPrefix(id, "kubernetes-cluster:") || strings.HasPrefix(id, "kubernetes-cluster-running:") {
		return 1, nil
	}
	return 0, fmt.Errorf("environment %q (backend.imageid) is not one podpath runs: podpath runs Kubernetes clusters, kubernetes-kubeadm-1node and kubernetes-kubeadm-2nodes and their -rapid, -4GB and k3s variants, not a plain VM", imageID)
}

// kcScenarioDirs finds the scenario folders under root at any depth: each
// folder with an index.json and no lab.yaml. Hidden folders are skipped.
func kcScenarioDirs(fsys fs.FS, root string) []string {
	var dirs []string
	_ = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != root && strings.HasPrefix(d.Name(), ".") {
				return fs.SkipDir
			}
			return nil
		}
		if d.Name() == ScenarioFile {
			dir := path.Dir(p)
			if _, err := fs.Stat(fsys, path.Join(dir, "lab.yaml")); err != nil {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	sort.Strings(dirs)
	return dirs
}

var slugRE = regexp.MustCompile(`[^a-z0-9]+`)

// kcIDs gives each scenario folder a lab id made of its path: lower case,
// anything else than a letter or digit a dash ("CKA/Fix DaemonSet" is
// cka-fix-daemonset). Folders whose ids would clash are told apart by a
// short hash of their path, so an id does not depend on what else is in
// the repository.
func kcIDs(root, rootName string, dirs []string) map[string]string {
	slugs := map[string][]string{}
	for _, d := range dirs {
		rel := strings.TrimPrefix(strings.TrimPrefix(d, root), "/")
		if d == root {
			rel = rootName // the folder given is itself a scenario
		}
		s := strings.Trim(slugRE.ReplaceAllString(strings.ToLower(rel), "-"), "-")
		if s == "" {
			s = "scenario"
		}
		if len(s) > 55 {
			s = strings.Trim(s[:55], "-")
		}
		slugs[s] = append(slugs[s], d)
	}
	ids := map[string]string{}
	for s, ds := range slugs {
		for _, d := range ds {
			if len(ds) == 1 {
				ids[d] = s
				continue
			}
			sum := sha256.Sum256([]byte(strings.TrimPrefix(d, root)))
			ids[d] = s + "-" + hex.EncodeToString(sum[:])[:6]
		}
	}
	return ids
}

// LoadScenarios loads the Killercoda scenarios under root in fsys and the
// tracks their structure.json files make. When root has a structure.json,
// only the scenarios it lists (directly or through its courses) load, as
// on Killercoda. A scenario with problems is left out and the others load.
func LoadScenarios(fsys fs.FS, root string, opts LoadOptions) ([]*Lab, []*Track, Problems) {
	display := func(name string) string { return path.Join(opts.DisplayRoot, name) }
	dirs := kcScenarioDirs(fsys, root)
	rootName := path.Base(path.Join(opts.DisplayRoot, root))
	if rootName == "." || rootName == "/" {
		rootName = "scenarios"
	}
	ids := kcIDs(root, rootName, dirs)
	tracks, listed, problems := kcTracks(fsys, root, ids, display, rootName)
	var labs []*Lab
	for _, d := range dirs {
		if listed != nil && !listed[d] {
			continue
		}
		l, ps := loadScenario(fsys, d, ids[d], display)
		problems = append(problems, ps...)
		if l != nil {
			labs = append(labs, l)
		}
	}
	// A track lists only the scenarios that loaded: the ones that did not
	// have their problems said already.
	loaded := map[string]bool{}
	for _, l := range labs {
		loaded[l.ID] = true
	}
	for _, t := range tracks {
		t.Labs = slices.DeleteFunc(t.Labs, func(id string) bool { return !loaded[id] })
	}
	tracks = slices.DeleteFunc(tracks, func(t *Track) bool { return len(t.Labs) == 0 })
	// Scenarios are numbered after podpath's own labs, in their tracks'
	// order and then by folder, so that a lab's "next lab" is the next
	// scenario of its course.
	pos := map[string]int{}
	for _, t := range tracks {
		for _, id := range t.Labs {
			if _, ok := pos[id]; !ok {
				pos[id] = len(pos) + 1
			}
		}
	}
	for _, l := range labs {
		if _, ok := pos[l.ID]; !ok {
			pos[l.ID] = len(pos) + 1
		}
		l.Order = kcOrderBase + pos[l.ID]
	}
	return labs, tracks, problems
}

// kcTracks reads root's structure.json and those of its courses. listed is
// nil when root has none (every scenario loads), else the scenario folders
// the structure lists. Each structure.json that lists scenarios is a track.
func kcTracks(fsys fs.FS, root string, ids map[string]string, display func(string) string, rootName string) (tracks []*Track, listed map[string]bool, problems Problems) {
	read := func(dir string) (*kcStructure, bool) {
		file := path.Join(dir, StructureFile)
		raw, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, false
		}
		var st kcStructure
		if err := json.Unmarshal(raw, &st); err != nil {
			problems = append(problems, Problem{File: display(file), Scenario: true, Message: jsonMessage(raw, err) + "; structure.json is {\"items\": [{\"path\": \"scenario-folder\"}, ...]}"})
			return nil, true
		}
		return &st, true
	}
	isScenario := func(dir string) bool { _, ok := ids[dir]; return ok }
	trackOf := func(dir string, st *kcStructure, title string) {
		t := &Track{Dir: dir, File: display(path.Join(dir, StructureFile))}
		rel := strings.TrimPrefix(strings.TrimPrefix(dir, root), "/")
		if dir == root {
			rel = rootName
		}
		t.ID = strings.Trim(slugRE.ReplaceAllString(strings.ToLower(rel), "-"), "-")
		if t.ID == "" {
			t.ID = "scenarios"
		}
		title = firstNonEmpty(title, st.Title, path.Base(path.Join(rootName, dir)))
		t.Title = Text{"en": title}
		t.Description = Text{"en": firstNonEmpty(st.Description, title)}
		for i, it := range st.Items {
			p := path.Clean(path.Join(dir, it.Path))
			if isScenario(p) {
				t.Labs = append(t.Labs, ids[p])
				if listed != nil {
					listed[p] = true
				}
				continue
			}
			if _, err := fs.Stat(fsys, p); err != nil {
				// Killercoda's own repositories list folders that are not
				// there; it skips them, and so does podpath, with a word.
				problems = append(problems, Problem{File: t.File, Field: fmt.Sprintf("items[%d].path", i), Warning: true, Scenario: true,
					Message: fmt.Sprintf("%s is not in the repository: the item is left out", it.Path)})
			}
		}
		if len(t.Labs) > 0 {
			tracks = append(tracks, t)
		}
	}
	top, ok := read(root)
	if !ok {
		// No structure at the top: every scenario loads, and each course
		// folder with a structure.json of its own is a track.
		for _, dir := range kcStructureDirs(fsys, root) {
			if st, _ := read(dir); st != nil {
				trackOf(dir, st, "")
			}
		}
		return tracks, nil, problems
	}
	listed = map[string]bool{}
	if top == nil {
		return nil, listed, problems
	}
	trackOf(root, top, "")
	for _, it := range top.Items {
		dir := path.Clean(path.Join(root, it.Path))
		if isScenario(dir) {
			continue
		}
		if st, _ := read(dir); st != nil {
			trackOf(dir, st, it.Title)
			continue
		}
		// A course folder with no structure.json: its scenarios, in
		// folder order.
		st := &kcStructure{Title: it.Title, Description: it.Description}
		for d := range ids {
			if strings.HasPrefix(d, dir+"/") {
				st.Items = append(st.Items, kcItem{Path: strings.TrimPrefix(d, dir+"/")})
			}
		}
		sort.Slice(st.Items, func(i, j int) bool { return st.Items[i].Path < st.Items[j].Path })
		if len(st.Items) > 0 {
			trackOf(dir, st, it.Title)
		}
	}
	return tracks, listed, problems
}

// kcStructureDirs are the folders under root (root excluded) with a
// structure.json.
func kcStructureDirs(fsys fs.FS, root string) []string {
	var dirs []string
	_ = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && p != root && strings.HasPrefix(d.Name(), ".") {
			return fs.SkipDir
		}
		if !d.IsDir() && d.Name() == StructureFile && path.Dir(p) != root {
			dirs = append(dirs, path.Dir(p))
		}
		return nil
	})
	return dirs
}

// jsonMessage says where a JSON file is broken.
func jsonMessage(raw []byte, err error) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "the file is empty"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(raw[:min(int(se.Offset), len(raw))], []byte("\n"))
		return fmt.Sprintf("line %d: %s", line, se.Error())
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("%s: %s is the wrong type (want %s)", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// kcOrderBase numbers scenarios after podpath's own labs: 101, 102, ...
const kcOrderBase = 100

// kcBackgroundDir holds a scenario's background scripts on the control
// plane; kcLogDir their output, as on Killercoda.
const (
	kcBackgroundDir = "/var/lib/podpath/killercoda"
	kcLogDir        = "/var/log/killercoda"
)

// loadScenario reads the scenario in dir and makes it a lab.
func loadScenario(fsys fs.FS, dir, id string, display func(string) string) (*Lab, Problems) {
	file := display(path.Join(dir, ScenarioFile))
	raw, err := fs.ReadFile(fsys, path.Join(dir, ScenarioFile))
	if err != nil {
		return nil, Problems{{File: file, Scenario: true, Message: "cannot read index.json: " + errMessage(err)}}
	}
	var sc kcScenario
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, Problems{{File: file, Scenario: true, Message: jsonMessage(raw, err) + "; a scenario's index.json needs at least {\"backend\": {\"imageid\": \"kubernetes-kubeadm-2nodes\"}} (docs/KILLERCODA.md)"}}
	}
	var problems, warnings Problems
	bad := func(field, format string, a ...any) {
		problems = append(problems, Problem{File: file, Field: field, Scenario: true, Message: fmt.Sprintf(format, a...)})
	}
	warn := func(field, format string, a ...any) {
		warnings = append(warnings, Problem{File: file, Field: field, Scenario: true, Warning: true, Message: fmt.Sprintf(format, a...)})
	}
	workers, err := kcWorkers(sc.Backend.ImageID)
	if err != nil {
		bad("backend.imageid", "%s", err)
	}
	// read returns a file the index names, by its path in the scenario
	// folder; a missing script named without ".sh" is found with it.
	read := func(field, name string) (string, string) {
		clean := path.Clean(name)
		if path.IsAbs(clean) || strings.HasPrefix(clean, "..") {
			bad(field, "%s is outside the scenario folder", name)
			return "", ""
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, clean))
		if err != nil && !strings.HasSuffix(clean, ".sh") {
			if b2, err2 := fs.ReadFile(fsys, path.Join(dir, clean+".sh")); err2 == nil {
				warn(field, "%s is not there; %s.sh is, and is used", name, name)
				return string(b2), clean + ".sh"
			}
		}
		if err != nil {
			bad(field, "%s names %s, which is not in %s", field, name, display(dir))
			return "", ""
		}
		return string(b), clean
	}
	title := firstNonEmpty(strings.TrimSpace(sc.Title), path.Base(dir))
	l := &Lab{
		ID:         id,
		Title:      Text{"en": title},
		Summary:    Text{"en": firstNonEmpty(strings.TrimSpace(sc.Description), title)},
		Level:      kcLevel(string(sc.Difficulty)),
		Minutes:    kcMinutes(string(sc.Time)),
		Cluster:    Cluster{Workers: workers},
		Dir:        dir,
		Verbatim:   true,
		Killercoda: true,
	}
	l.Files = func(name string) ([]byte, error) {
		clean := path.Clean(name)
		if path.IsAbs(clean) || strings.HasPrefix(clean, "..") {
			return nil, fmt.Errorf("%s is outside the scenario folder", name)
		}
		return fs.ReadFile(fsys, path.Join(dir, clean))
	}
	l.Setup = append(l.Setup, Action{Run: "mkdir -p " + kcLogDir + " " + kcBackgroundDir})
	// text makes a text of the scenario podpath's Markdown, its images
	// addressed from the scenario folder; it returns the text's commands.
	text := func(field, md, name string) (string, []string) {
		body, commands, ws := kcMarkdown(md)
		body, shared, iws := kcImages(fsys, dir, name, body)
		for _, w := range append(ws, iws...) {
			warn(field, "%s", w)
		}
		for _, p := range shared {
			if l.shared == nil {
				l.shared = map[string]bool{}
			}
			l.shared[p] = true
		}
		return body, commands
	}
	l.sharedFS = fsys
	l.Setup = append(l.Setup, kcAssets(fsys, dir, sc.Details.Assets, bad, warn)...)
	if in := sc.Details.Intro; in != nil {
		if in.Text != "" {
			if md, name := read("details.intro.text", in.Text); md != "" {
				body, _ := text("details.intro.text", md, name)
				l.Intro = Text{"en": body}
			}
		}
		if bg := in.background(); bg != "" {
			if _, name := read("details.intro.background", bg); name != "" {
				l.Setup = append(l.Setup, kcBackground(name, "intro", true)...)
			}
		}
		if fg := in.foreground(); fg != "" {
			if _, name := read("details.intro.foreground", fg); name != "" {
				l.Setup = append(l.Setup, kcForeground(name, "intro")...)
			}
		}
	}
	if len(sc.Details.Steps) == 0 {
		bad("details.steps", "the scenario has no steps: podpath runs scenarios with at least one step (a playground with none is not a lab)")
	}
	for i, p := range sc.Details.Steps {
		where := fmt.Sprintf("details.steps[%d]", i)
		// A scenario names no layers of the Pod's path: its steps light
		// none on the lab page's diagram.
		st := Step{ID: "step" + strconv.Itoa(i+1), Title: Text{"en": firstNonEmpty(strings.TrimSpace(p.Title), "Step "+strconv.Itoa(i+1))}, Layers: []string{}}
		if p.Text == "" {
			bad(where+".text", "step %d names no text file", i+1)
		} else if md, name := read(where+".text", p.Text); md != "" {
			body, commands := text(where+".text", md, name)
			st.Body = Text{"en": body}
			st.Solve = kcSolve(commands)
		}
		if p.Verify != "" {
			if script, name := read(where+".verify", p.Verify); name != "" {
				st.Checks = []Check{{
					Name:    Text{"en": "The step's verify script (" + name + ") exits 0"},
					Probe:   Probe{Script: &ScriptProbe{Node: names.ControlPlane, Script: kcShellPrelude + script, Feedback: FeedbackOutput}},
					Timeout: Duration(kcVerifyTimeout),
				}}
			}
		} else {
			st.Unverified = true
			st.Checks = []Check{{
				Name:  Text{"en": "This step has no verify script: Check moves on"},
				Probe: Probe{Script: &ScriptProbe{Node: names.ControlPlane, Script: "true"}},
			}}
		}
		if bg := p.background(); bg != "" {
			if _, name := read(where+".background", bg); name != "" {
				if i == 0 {
					l.Setup = append(l.Setup, kcBackground(name, st.ID, true)...)
				} else {
					st.Start = kcBackground(name, st.ID, false)
				}
			}
		}
		if fg := p.foreground(); fg != "" {
			if _, name := read(where+".foreground", fg); name != "" {
				if i == 0 {
					l.Setup = append(l.Setup, kcForeground(name, st.ID)...)
				} else {
					st.Start = append(st.Start, kcForeground(name, st.ID)...)
				}
			}
		}
		l.Steps = append(l.Steps, st)
	}
	if f := sc.Details.Finish; f != nil && f.Text != "" {
		if md, name := read("details.finish.text", f.Text); md != "" {
			body, _ := text("details.finish.text", md, name)
			l.Finish = Text{"en": body}
		}
	}
	if len(problems) > 0 {
		return nil, append(problems, warnings...)
	}
	l.Warnings = warnings
	return l, nil
}

var (
	// kcSSHRE is a command that logs in to a node: the commands after it
	// run there, as they would in the terminal it was typed into.
	kcSSHRE = regexp.MustCompile(`^ssh(?:\s+-[oip]\s+\S+|\s+-\S+)*\s+(?:root@)?(node01|controlplane)$`)
	// kcInteractiveRE is a command that waits for a person (an editor, a
	// pager, a watch, a shell inside a container): a solve cannot run it.
	kcInteractiveRE = regexp.MustCompile(`^(?:sudo\s+)?(?:vi|vim|nano|emacs|less|more|top|htop|watch|tmux|screen)\b|\bkubectl\s+edit\b|\s-(?:it|ti)\b|^(?:bash|sh)$`)
)

// kcSolve turns a step's {{exec}} commands into its solve: each runs where
// it would have been typed (after "ssh node01", on node01, until "exit"),
// and those that wait for a person are left out.
func kcSolve(commands []string) []Action {
	var solve []Action
	node := names.ControlPlane
	for _, c := range commands {
		line := strings.TrimSpace(c)
		if m := kcSSHRE.FindStringSubmatch(line); m != nil {
			node = m[1]
			continue
		}
		if line == "exit" || line == "logout" {
			node = names.ControlPlane
			continue
		}
		if kcInteractiveRE.MatchString(line) {
			continue
		}
		solve = append(solve, Action{Run: kcShellPrelude + c, Node: node})
	}
	return solve
}

// kcVerifyTimeout bounds one run of a verify script: real ones wait for a
// rollout for up to three minutes.
const kcVerifyTimeout = 200 * time.Second

// kcShellPrelude makes a script run as in a learner's terminal on
// Killercoda: in /root, with the k alias.
const kcShellPrelude = "cd /root 2>/dev/null\nshopt -s expand_aliases\nalias k=kubectl\n"

// kcBackground runs a background script hidden, on the control plane, as
// root, with its output in /var/log/killercoda: the script is put beside
// the others and started once (a step passed again does not start it
// again) as a transient systemd unit. At setup (wait) it is given up to a
// minute to end, so that the learner's first command finds what it
// prepares; one that runs longer (some start a daemon, or wait for the
// learner) goes on in the background, as on Killercoda. When a step
// begins nothing waits for it: the learner's Check does not.
func kcBackground(name, which string, wait bool) []Action {
	dst := kcBackgroundDir + "/" + which + "-background.sh"
	log := kcLogDir + "/" + which + "_background.log"
	unit := "killercoda-" + which + "-background"
	run := "[ -e " + dst + ".started ] && exit 0\ntouch " + dst + ".started\n" +
		"systemd-run --quiet --unit " + unit + " --setenv=KUBECONFIG=/etc/kubernetes/admin.conf --setenv=HOME=/root " +
		"sh -c 'cd /root && exec bash " + dst + " > " + log + " 2>&1'"
	if wait {
		run += "\nfor i in $(seq 60); do systemctl is-active --quiet " + unit + " || exit 0; sleep 1; done"
	}
	return []Action{{Copy: name, To: dst}, {Run: run}}
}

// KeeperTmux and KeeperSession are the tmux that keeps each node's learner
// shell and its session (sandbox.KeeperCommand; a test there keeps them
// the same).
const (
	KeeperTmux    = "tmux -L podpath -f /etc/podpath/tmux.conf"
	KeeperSession = "main"
)

// kcForeground types a foreground script into the learner's shell on the
// control plane, line by line as Killercoda does (empty lines skipped),
// once: through the tmux session that keeps the shell, which it starts if
// the learner has not opened the terminal yet, so the learner finds the
// commands and their output there, whichever browser they use.
func kcForeground(name, which string) []Action {
	dst := kcBackgroundDir + "/" + which + "-foreground.sh"
	run := "[ -e " + dst + ".typed ] && exit 0\ntouch " + dst + ".typed\n" +
		"T='" + KeeperTmux + "'\n" +
		"$T has-session -t " + KeeperSession + " 2>/dev/null || $T new-session -d -s " + KeeperSession + " -c /root 'bash -l'\n" +
		// A shell just started prints its prompt first, so the typed
		// lines come after it, as a learner's would.
		"for i in $(seq 50); do $T capture-pane -p -t " + KeeperSession + " | grep -q '[#$] *$' && break; sleep 0.1; done\n" +
		"while IFS= read -r line || [ -n \"$line\" ]; do [ -z \"$line\" ] && continue; $T send-keys -t " + KeeperSession + " -l -- \"$line\"; $T send-keys -t " + KeeperSession + " Enter; done < " + dst
	return []Action{{Copy: name, To: dst}, {Run: run}}
}

// chmodRE is what an asset's chmod may be: a mode chmod takes.
var chmodRE = regexp.MustCompile(`^(?:[0-7]{3,4}|[ugoa]*[-+=][rwxXst]+(?:,[ugoa]*[-+=][rwxXst]+)*)$`)

// kcAssets copies the scenario's assets/ files to their host. target is a
// folder; a file keeps its path below the glob's fixed folders (app*/**
// puts app1/a/b at target/app1/a/b, conf/*.yaml and conf/x.yaml put
// conf/x.yaml at target/x.yaml).
func kcAssets(fsys fs.FS, dir string, assets map[string][]kcAsset, bad, warn func(string, string, ...any)) []Action {
	var out []Action
	hosts := make([]string, 0, len(assets))
	for h := range assets {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var files []string
	_ = fs.WalkDir(fsys, path.Join(dir, "assets"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, path.Join(dir, "assets")+"/"))
		}
		return nil
	})
	for _, host := range hosts {
		node := ""
		switch host {
		case "host01":
			node = names.ControlPlane
		case "host02":
			node = names.Worker(1)
		default:
			bad("details.assets."+host, "unknown host %s: assets go to host01 (the control plane) or host02 (node01)", host)
			continue
		}
		for i, a := range assets[host] {
			field := fmt.Sprintf("details.assets.%s[%d]", host, i)
			if a.File == "" || a.Target == "" {
				bad(field, "an asset needs file (in the scenario's assets/ folder) and target (a folder)")
				continue
			}
			if a.Chmod != "" && !chmodRE.MatchString(a.Chmod) {
				bad(field+".chmod", "chmod %q is not a mode chmod takes, like +x or 0644", a.Chmod)
				continue
			}
			target := a.Target
			if target == "~" || strings.HasPrefix(target, "~/") {
				target = "/root" + strings.TrimPrefix(target, "~")
			}
			if !strings.HasPrefix(target, "/") {
				target = "/root/" + target
			}
			glob := strings.TrimPrefix(path.Clean(a.File), "./")
			if !doublestar.ValidatePattern(glob) {
				bad(field+".file", "%s is not a valid glob", a.File)
				continue
			}
			fixed, _ := doublestar.SplitPattern(glob)
			if fixed == "." || !strings.ContainsAny(glob, "*?[{") {
				fixed = path.Dir(glob)
			}
			var matched []string
			for _, f := range files {
				if ok, _ := doublestar.Match(glob, f); ok {
					matched = append(matched, f)
				}
			}
			if len(matched) == 0 {
				// Killercoda's own repositories name assets that are not
				// there; the scenario still runs.
				warn(field+".file", "no file in assets/ matches %s: nothing is copied", a.File)
				continue
			}
			var dsts []string
			for _, f := range matched {
				rel := f
				if fixed != "." {
					rel = strings.TrimPrefix(f, fixed+"/")
				}
				dst := path.Join(target, rel)
				out = append(out, Action{Copy: "assets/" + f, To: dst, Node: node})
				dsts = append(dsts, ShellQuote(dst))
			}
			if a.Chmod != "" {
				out = append(out, Action{Run: "chmod " + a.Chmod + " " + strings.Join(dsts, " "), Node: node})
			}
		}
	}
	return out
}

// kcLevel maps difficulty to a level; Killercoda's is free text.
func kcLevel(d string) string {
	switch strings.ToLower(strings.TrimSpace(d)) {
	case "intermediate", "medium", "moderate":
		return "intermediate"
	case "advanced", "hard", "expert", "difficult":
		return "advanced"
	}
	return "beginner"
}

var numberRE = regexp.MustCompile(`\d+`)

// kcMinutes reads time ("15", "10-15 minutes", "8 minutes"): the largest
// number, or 15 when there is none.
func kcMinutes(t string) int {
	best := 0
	for _, m := range numberRE.FindAllString(t, -1) {
		if n, err := strconv.Atoi(m); err == nil && n > best && n < 1000 {
			best = n
		}
	}
	if best == 0 {
		return 15
	}
	return best
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// ShellQuote quotes s as one word for a POSIX shell.
func ShellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// KillercodaHost is the setup action that writes a session's traffic
// address pattern (PORT in place of the port) into the control plane's
// /etc/killercoda/host, as Killercoda does: `sed 's/PORT/8080/'
// /etc/killercoda/host` prints the address of the app on port 8080. It
// runs before the scenario's own setup.
func KillercodaHost(pattern string) Action {
	return Action{Run: "mkdir -p /etc/killercoda && printf '%s\\n' " + ShellQuote(pattern) + " > /etc/killercoda/host"}
}
