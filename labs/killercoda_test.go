package labs

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

// The fixtures in testdata/killercoda are a course written for these tests
// in Killercoda's format: a structure.json that lists a one-node scenario,
// a two-node scenario in a folder with a space and capitals, and a folder
// that is not there.
func TestLoadKillercodaCourse(t *testing.T) {
	all, problems := LoadDir("testdata/killercoda")
	if fatal := problems.Fatal(); len(fatal) > 0 {
		t.Fatalf("problems: %v", fatal)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].String(), "structure.json") || !strings.Contains(problems[0].Message, "not-here is not in the repository") {
		t.Errorf("want one warning, for the missing not-here item of structure.json; got %v", problems)
	}
	var ids []string
	for _, l := range all {
		ids = append(ids, l.ID)
	}
	if !slices.Equal(ids, []string{"node-runtime", "pods-first"}) {
		t.Fatalf("lab ids %v, want node-runtime (from \"Node Runtime\") and pods-first", ids)
	}
	first, runtime := Find(all, "pods-first"), Find(all, "node-runtime")

	// The scenario's fields.
	if first.Title.In("en") != "A first Pod" || !strings.HasPrefix(first.Summary.In("en"), "Run a Pod from a manifest") {
		t.Errorf("title %q, summary %q", first.Title.In("en"), first.Summary.In("en"))
	}
	if first.Cluster.Workers != 0 || runtime.Cluster.Workers != 1 {
		t.Errorf("workers %d and %d: kubernetes-kubeadm-1node has none, -2nodes one", first.Cluster.Workers, runtime.Cluster.Workers)
	}
	if first.Level != "beginner" || runtime.Level != "intermediate" || first.Minutes != 15 || runtime.Minutes != 20 {
		t.Errorf("levels %s, %s and minutes %d, %d; want beginner (Easy), intermediate, 15 (10-15 minutes), 20 (a number)", first.Level, runtime.Level, first.Minutes, runtime.Minutes)
	}
	if first.Order != 101 || runtime.Order != 102 {
		t.Errorf("orders %d and %d: after podpath's labs, in structure.json's order", first.Order, runtime.Order)
	}
	if !first.Verbatim || !first.Killercoda {
		t.Error("a scenario's texts are not Go templates")
	}

	// Setup: assets by glob and by name (~ is /root), chmod, and the
	// intro's courseData started as a hidden background unit.
	var copies []string
	var runs []string
	for _, a := range first.Setup {
		if a.Copy != "" {
			copies = append(copies, a.Copy+" -> "+a.Node+":"+a.To)
		}
		runs = append(runs, a.Run)
	}
	wantCopies := []string{
		"assets/manifests/hello.yaml -> controlplane:/root/manifests/hello.yaml",
		"assets/check-node.sh -> controlplane:/root/check-node.sh",
		"setup.sh -> :" + kcBackgroundDir + "/intro-background.sh",
	}
	if !slices.Equal(copies, wantCopies) {
		t.Errorf("setup copies\n%s\nwant\n%s", strings.Join(copies, "\n"), strings.Join(wantCopies, "\n"))
	}
	setup := strings.Join(runs, "\n")
	for _, want := range []string{"chmod +x '/root/check-node.sh'", "systemd-run --quiet --unit killercoda-intro-background", "> /var/log/killercoda/intro_background.log"} {
		if !strings.Contains(setup, want) {
			t.Errorf("setup lacks %q:\n%s", want, setup)
		}
	}
	if b, err := first.Files("setup.sh"); err != nil || !strings.Contains(string(b), "kubectl create namespace practice") {
		t.Errorf("the background script is read from the scenario: %q, %v", b, err)
	}

	// Steps: the verify script is the check, run on the control plane with
	// its output as feedback; a step without one is marked unverified; the
	// {{exec}} commands are the solve.
	if len(first.Steps) != 4 {
		t.Fatalf("%d steps, want 4", len(first.Steps))
	}
	s1 := first.Steps[0]
	if s1.ID != "step1" || s1.Title.In("en") != "Run the Pod" || len(s1.Checks) != 1 {
		t.Fatalf("step 1: %+v", s1)
	}
	sp := s1.Checks[0].Probe.Script
	if sp == nil || sp.Node != "controlplane" || sp.Feedback != FeedbackOutput || !strings.Contains(sp.Script, "kubectl get pod hello -n practice") {
		t.Errorf("step 1's check: %+v", sp)
	}
	if s1.Checks[0].Timeout.D() < 180e9 {
		t.Errorf("a verify script may wait for a rollout: timeout %s", s1.Checks[0].Timeout.D())
	}
	if len(s1.Solve) != 2 || !strings.HasSuffix(s1.Solve[0].Run, "kubectl apply -n practice -f /root/manifests/hello.yaml") || !strings.HasSuffix(s1.Solve[1].Run, "--timeout=120s") {
		t.Errorf("step 1's solve: %+v", s1.Solve)
	}
	if !strings.Contains(s1.Body.In("en"), "{{ .Release.Name }}") || !strings.Contains(s1.Body.In("en"), "<details>") {
		t.Errorf("step 1's text keeps Helm's braces and the <details> hint:\n%s", s1.Body.In("en"))
	}
	if s := first.Steps[3]; !s.Unverified || len(s.Checks) != 1 || s.Checks[0].Probe.Script == nil {
		t.Errorf("step 4 has no verify script: %+v", s)
	}
	if first.Steps[1].Unverified || first.Steps[2].Unverified {
		t.Error("steps 2 and 3 have verify scripts")
	}
	if s3 := first.Steps[2]; !strings.Contains(s3.Body.In("en"), "({{TRAFFIC_HOST1_30080}})") || len(first.Warnings) != 0 {
		t.Errorf("step 3's traffic link is kept for the session to fill, with no warning: %v\n%s", first.Warnings, s3.Body.In("en"))
	}
	if first.Finish.In("en") != "You ran a Pod on a one-node cluster.\n" {
		t.Errorf("finish: %q", first.Finish.In("en"))
	}
	if !strings.Contains(first.Intro.In("en"), "`/root/manifests`;") {
		t.Errorf("intro: the empty {{}} after inline code goes: %q", first.Intro.In("en"))
	}

	// The two-node scenario: code (Katacoda's foreground) is typed into
	// the learner's shell on the control plane through its tmux keeper,
	// once, at setup.
	if len(runtime.Warnings) != 0 {
		t.Errorf("node-runtime's warnings %v", runtime.Warnings)
	}
	typed := ""
	for _, a := range runtime.Setup {
		if strings.Contains(a.Run, "send-keys") {
			typed = a.Run
		}
	}
	for _, want := range []string{KeeperTmux, "new-session -d -s main -c /root 'bash -l'", "send-keys -t main -l --", kcBackgroundDir + "/intro-foreground.sh.typed ] && exit 0"} {
		if !strings.Contains(typed, want) {
			t.Errorf("the intro's foreground: %q lacks %q", typed, want)
		}
	}
	// A step's background starts as the step begins: the first step's at
	// setup, after the intro's; a later one's when the step before is done.
	var setupRuns []string
	for _, a := range runtime.Setup {
		setupRuns = append(setupRuns, a.Copy+a.Run)
	}
	if s := strings.Join(setupRuns, "\n"); !strings.Contains(s, "step1/background.sh") || !strings.Contains(s, "--unit killercoda-step1-background") {
		t.Errorf("step 1's background is part of setup:\n%s", s)
	}
	start := first.Steps[1].Start
	if len(start) != 2 || start[0].Copy != "step2-background.sh" || !strings.Contains(start[1].Run, "--unit killercoda-step2-background") ||
		!strings.Contains(start[1].Run, ".started ] && exit 0") || strings.Contains(start[1].Run, "seq 60") {
		t.Errorf("step 2's background starts once when it begins, without a wait: %+v", start)
	}
	if len(first.Steps[0].Start) != 0 || len(first.Steps[2].Start) != 0 {
		t.Error("steps 1 and 3 of pods-first have no background")
	}
	if v := runtime.Steps[0].Checks[0].Probe.Script.Script; !strings.Contains(v, "ssh node01 crictl ps --name runner") {
		t.Errorf("verify scripts run as written (ssh node01, crictl): %q", v)
	}

	// structure.json is a track, in its order, with the missing item left out.
	tracks, tps := LoadDirTracks("testdata/killercoda")
	if len(tps) != 0 {
		t.Errorf("track problems are LoadDir's to say, once: %v", tps)
	}
	if len(tracks) != 1 || tracks[0].ID != "killercoda" || tracks[0].Title.In("en") != "podpath's own Killercoda course" || !slices.Equal(tracks[0].Labs, []string{"pods-first", "node-runtime"}) {
		t.Fatalf("tracks: %+v", tracks)
	}
	if ps := CheckTracks(tracks, all); len(ps) != 0 {
		t.Errorf("the track lists labs that are not there: %v", ps)
	}
}

// Each broken form is reported with its file and leaves that scenario out;
// the others load, and two folders whose names make one id are told apart.
func TestLoadKillercodaBroken(t *testing.T) {
	all, problems := LoadDir("testdata/killercoda-broken")
	if len(problems.Fatal()) != 0 {
		t.Errorf("a scenario's problems do not stop the others: %v", problems.Fatal())
	}
	var ids []string
	for _, l := range all {
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	if len(ids) != 3 || ids[0] != "good" || !strings.HasPrefix(ids[1], "same-name-") || !strings.HasPrefix(ids[2], "same-name-") || ids[1] == ids[2] {
		t.Errorf("loaded %v; want good and two distinct same-name-<hash> ids", ids)
	}
	for _, l := range all {
		if !idRE.MatchString(l.ID) {
			t.Errorf("lab id %q is not a valid id", l.ID)
		}
	}
	for _, want := range []struct{ file, says string }{
		{"empty-index/index.json", "the file is empty"},
		{"bad-json/index.json", "line 4: invalid character ']'"},
		{"plain-vm/index.json", `environment "ubuntu" (backend.imageid) is not one podpath runs`},
		{"missing-text/index.json", "details.steps[0].text names step1.md, which is not in"},
		{"missing-text/index.json", "details.steps[0].verify names verify1.sh"},
		{"no-steps/index.json", "the scenario has no steps"},
	} {
		found := false
		for _, p := range problems {
			if strings.HasSuffix(p.File, want.file) && strings.Contains(p.String(), want.says) && p.Scenario && !p.Warning {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem in %s saying %q; problems:\n%v", want.file, want.says, problems)
		}
	}
	// A missing asset is a warning (Killercoda's own repositories have
	// them), given with the scenario's other problems.
	warned := false
	for _, p := range problems {
		if strings.HasSuffix(p.File, "missing-text/index.json") && p.Warning && strings.Contains(p.Message, "no file in assets/ matches nothing-*.yaml") {
			warned = true
		}
	}
	if !warned {
		t.Errorf("a missing asset is a warning: %v", problems)
	}
}

func TestKillercodaEnvironments(t *testing.T) {
	for id, want := range map[string]int{
		"kubernetes-kubeadm-1node": 0, "kubernetes-kubeadm-2nodes": 1, "kubernetes-kubeadm-1node-4GB": 0,
		"kubernetes-kubeadm-2nodes-rapid": 1, "kubernetes-kubeadm-1node-4GB-rapid": 0, "kubernetes-k3s-1node": 0,
		"kubernetes-k3s-2nodes": 1, "kubernetes-kubeadm-2nodes-ubuntu20.04": 1, "kubernetes-cluster:1.21": 1,
	} {
		if got, err := kcWorkers(id); err != nil || got != want {
			t.Errorf("%s: %d workers, %v; want %d", id, got, err, want)
		}
	}
	for _, id := range []string{"ubuntu", "ubuntu-4GB", "kubernetes-kubeadm-3nodes", ""} {
		if _, err := kcWorkers(id); err == nil {
			t.Errorf("%q is refused", id)
		} else if !strings.Contains(err.Error(), "kubernetes-kubeadm-1node") {
			t.Errorf("%q: the message names what runs: %v", id, err)
		}
	}
}

func TestKillercodaMarkdown(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		commands       []string
	}{
		{"fenced exec", "Run:\n\n```\nkubectl get pods\nkubectl get nodes\n```{{exec}}\n",
			"Run:\n\n```bash controlplane\nkubectl get pods\nkubectl get nodes\n```\n", []string{"kubectl get pods\nkubectl get nodes"}},
		{"exec interrupt, language and highlight", "```yaml{2}\nwatch date\n```{{exec interrupt}}",
			"```bash controlplane interrupt\nwatch date\n```", []string{"watch date"}},
		{"fenced copy keeps its language", "```yaml\nkind: Pod\n```{{copy}}", "```yaml\nkind: Pod\n```", nil},
		{"fenced copy without a language", "```\nkind: Pod\n```{{copy}}", "```text\nkind: Pod\n```", nil},
		{"plain fence", "```\nls\n```", "```\nls\n```", nil},
		{"inline exec on its own line", "`kubectl get ns`{{exec}}", "```bash controlplane\nkubectl get ns\n```", []string{"kubectl get ns"}},
		{"inline exec as a list item", "- `k get po`{{exec}}", "-\n  ```bash controlplane\n  k get po\n  ```", []string{"k get po"}},
		{"inline exec in a sentence", "Run `date`{{exec}} and `id`{{copy}} or `uname`{{}}.", "Run `date` and `id` or `uname`.", []string{"date"}},
		{"Katacoda's execute", "`whoami`{{execute}}", "```bash controlplane\nwhoami\n```", []string{"whoami"}},
		{"other braces are text", "Helm: `{{ .Values.x }}` and {{ .Release.Name }}", "Helm: `{{ .Values.x }}` and {{ .Release.Name }}", nil},
		{"go-template in a command", "```\nkubectl get cm -o go-template='{{.data.k}}'\n```{{exec}}",
			"```bash controlplane\nkubectl get cm -o go-template='{{.data.k}}'\n```", []string{"kubectl get cm -o go-template='{{.data.k}}'"}},
		{"indented in a list", "1. Apply:\n   ```\n   kubectl apply -f x.yaml\n   ```{{exec}}",
			"1. Apply:\n   ```bash controlplane\n   kubectl apply -f x.yaml\n   ```", []string{"kubectl apply -f x.yaml"}},
		{"unclosed fence stays", "```\nls {{exec}}", "```\nls {{exec}}", nil},
	} {
		got, commands, _ := kcMarkdown(c.in)
		if got != c.want {
			t.Errorf("%s:\n%q\nwant\n%q", c.name, got, c.want)
		}
		if !slices.Equal(commands, c.commands) {
			t.Errorf("%s: commands %q, want %q", c.name, commands, c.commands)
		}
	}
	if _, _, w := kcMarkdown("[open]({{TRAFFIC_HOST1_80}})"); len(w) != 0 {
		t.Errorf("a traffic link of the control plane loads without a warning: %v", w)
	}
	if _, _, w := kcMarkdown("[open]({{TRAFFIC_HOST2_80}}) {{TRAFFIC_HOST1_99999}}"); len(w) != 2 || !strings.Contains(w[0], "host 2") || !strings.Contains(w[1], "not a port") {
		t.Errorf("another host's link and a port out of range are warned about: %v", w)
	}
	d := TemplateData{TrafficPattern: "http://s1-PORT.localhost:8080/", TrafficPorts: "http://x/sessions/s1/traffic"}
	l := &Lab{Verbatim: true}
	got, _ := l.Render("[app]({{TRAFFIC_HOST1_30080}}) or {{ TRAFFIC_SELECTOR }} or [pick]({{TRAFFIC_SELECTOR}}); `{{.Values}}` stays", d)
	if want := "[app](http://s1-30080.localhost:8080/) or [Traffic / Ports](http://x/sessions/s1/traffic) or [pick](http://x/sessions/s1/traffic); `{{.Values}}` stays"; got != want {
		t.Errorf("traffic links of a session:\n got %q\nwant %q", got, want)
	}
}

// Killercoda resolves a text's images from the text's own folder, and a
// scenario may show one from above its folder in its repository
// (../assets/logo.png). kcImages addresses them all from the scenario
// folder, names those above it, and warns about what cannot show.
func TestKillercodaImages(t *testing.T) {
	fsys := fstest.MapFS{
		"repo/assets/logo.png":        {Data: []byte("png")},
		"repo/s1/intro.jpg":           {Data: []byte("jpg")},
		"repo/s1/step2/flow.svg":      {Data: []byte("svg")},
		"repo/s1/step2/assets/b.png":  {Data: []byte("png")},
		"repo/s1/step2/notes.txt":     {Data: []byte("txt")},
		"repo/s1/step2/a b.png":       {Data: []byte("png")},
		"repo/assets/图.png":           {Data: []byte("png")},
		"repo/other/secret-image.png": {Data: []byte("png")},
	}
	for _, c := range []struct {
		name, file, in, want string
		shared               []string
		warn                 []string
	}{
		{"the folder's own", "intro.md", "![a](./intro.jpg) ![web](https://example.com/a.png) ![d](data:image/png;base64,AA) ![r](/x.png)",
			"![a](intro.jpg) ![web](https://example.com/a.png) ![d](data:image/png;base64,AA) ![r](/x.png)", nil, nil},
		{"from the text's folder", "step2/text.md", "![f](./flow.svg \"t\") <img alt=\"b\" src=\"assets/b.png?v=2\" width=\"9\">",
			"![f](step2/flow.svg \"t\") <img alt=\"b\" src=\"step2/assets/b.png?v=2\" width=\"9\">", nil, nil},
		{"above the folder, in the repository", "step2/text.md", "![l](../../assets/logo.png)\n<img src=\"../assets/logo.png\" style=\"width: 50px\">",
			"![l](../assets/logo.png)\n<img src=\"assets/logo.png\" style=\"width: 50px\">", []string{"repo/assets/logo.png"},
			[]string{"../assets/logo.png is not there (repo/s1/assets/logo.png)"}},
		{"percent-encoded, as a browser sends it", "step2/text.md", "![s](./a%20b.png) ![z](../../assets/%E5%9B%BE.png)",
			"![s](step2/a%20b.png) ![z](../assets/%E5%9B%BE.png)", []string{"repo/assets/图.png"}, nil},
		{"above the repository", "intro.md", "![x](../../../etc/x.png)", "![x](../../../etc/x.png)", nil, []string{"outside the scenario's repository"}},
		{"missing and not an image", "step2/text.md", "![m](gone.png) ![t](notes.txt)", "![m](step2/gone.png) ![t](step2/notes.txt)", nil,
			[]string{"not a PNG", "gone.png is not there"}},
		{"code is text", "step2/text.md", "```\n![c](./flow.svg)\n```\n`![i](./flow.svg)` ![o](./flow.svg)",
			"```\n![c](./flow.svg)\n```\n`![i](./flow.svg)` ![o](step2/flow.svg)", nil, nil},
	} {
		got, shared, w := kcImages(fsys, "repo/s1", c.file, c.in)
		if got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
		if !slices.Equal(shared, c.shared) {
			t.Errorf("%s: shared %q, want %q", c.name, shared, c.shared)
		}
		if len(w) != len(c.warn) {
			t.Errorf("%s: warnings %q, want ones saying %q", c.name, w, c.warn)
			continue
		}
		for _, want := range c.warn {
			if !slices.ContainsFunc(w, func(s string) bool { return strings.Contains(s, want) }) {
				t.Errorf("%s: warnings %q, want one saying %q", c.name, w, want)
			}
		}
	}

	// The server asks for an image as the rendered page addresses it,
	// maybe percent-encoded.
	l := &Lab{ID: "s1", Dir: "repo/s1", shared: map[string]bool{"repo/assets/图.png": true}, sharedFS: fsys}
	if p, ok := l.SharedImage("../assets/%E5%9B%BE.png"); !ok || p != "repo/assets/图.png" {
		t.Errorf("SharedImage of a percent-encoded address: %q %v", p, ok)
	}
	if b, err := l.ReadShared("repo/assets/图.png"); err != nil || string(b) != "png" {
		t.Errorf("ReadShared: %q %v", b, err)
	}
	if _, ok := l.SharedImage("../assets/logo.png"); ok {
		t.Errorf("SharedImage of an image the texts do not show")
	}

	// The loaded fixture: node-runtime's step 2 text sits in step2/ and
	// shows an image beside it and the course's, two folders up.
	all, _ := LoadDir("testdata/killercoda")
	for _, l := range all {
		p, ok := l.SharedImage("../assets/course.svg")
		if l.ID == "node-runtime" {
			body := l.Steps[1].Body["en"]
			if !strings.Contains(body, "(step2/containers.svg)") || !strings.Contains(body, `src="../assets/course.svg"`) || !ok || p != "assets/course.svg" {
				t.Errorf("node-runtime's step 2 images (shared %q %v):\n%s", p, ok, body)
			}
			if b, err := l.ReadShared("assets/course.svg"); err != nil || !strings.Contains(string(b), "<svg") {
				t.Errorf("reading the course's image: %v", err)
			}
		} else if ok {
			t.Errorf("%s shows no image from above its folder, yet SharedImage gives %q", l.ID, p)
		}
		if _, err := l.ReadShared("structure.json"); err == nil {
			t.Errorf("%s: ReadShared read a file its texts do not show", l.ID)
		}
	}
}

// A step's {{exec}} commands are its solve, each run where the learner's
// terminal would be: after "ssh node01" on node01 until "exit"; an editor,
// a pager or a watch waits for a person and is left out.
func TestKillercodaSolve(t *testing.T) {
	var got []string
	for _, a := range kcSolve([]string{"kubectl get nodes", "ssh node01", "crictl ps", "vim /etc/kubernetes/kubelet.conf",
		"exit", "watch kubectl get pods", "kubectl edit deploy web", "kubectl exec -it web -- sh", "ssh -o StrictHostKeyChecking=no node01",
		"systemctl restart kubelet", "logout", "k get po"}) {
		got = append(got, a.Node+": "+strings.TrimPrefix(a.Run, kcShellPrelude))
	}
	want := []string{"controlplane: kubectl get nodes", "node01: crictl ps", "node01: systemctl restart kubelet", "controlplane: k get po"}
	if !slices.Equal(got, want) {
		t.Errorf("solve\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A repository's structure.json decides what loads and in which order:
// a scenario it lists, a course with a structure.json of its own (its
// order, the item's title), a course without one (its scenarios in folder
// order); a scenario it does not list is hidden, as on Killercoda.
func TestKillercodaCourses(t *testing.T) {
	all, problems := LoadDir("testdata/killercoda-courses")
	if len(problems) != 0 {
		t.Fatalf("problems: %v", problems)
	}
	var ids []string
	for _, l := range all {
		ids = append(ids, l.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []string{"cka-a", "cka-b", "ckad-x", "ckad-y", "warmup"}) {
		t.Errorf("loaded %v: hidden is not listed and does not load", ids)
	}
	tracks, _ := LoadDirTracks("testdata/killercoda-courses")
	var got []string
	for _, tr := range tracks {
		got = append(got, tr.ID+" "+tr.Title.In("en")+": "+strings.Join(tr.Labs, ","))
	}
	want := []string{"killercoda-courses killercoda-courses: warmup", "cka CKA practice: cka-b,cka-a", "ckad CKAD practice: ckad-x,ckad-y"}
	if !slices.Equal(got, want) {
		t.Errorf("tracks\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	var order []string
	for _, l := range all {
		order = append(order, fmt.Sprintf("%d %s", l.Order, l.ID))
	}
	slices.Sort(order)
	if want := []string{"101 warmup", "102 cka-b", "103 cka-a", "104 ckad-x", "105 ckad-y"}; !slices.Equal(order, want) {
		t.Errorf("orders %v, want %v", order, want)
	}
}
