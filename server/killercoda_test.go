package server_test

import (
	"html"
	"os"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
)

// A folder of Killercoda scenarios in PODPATH_LABS is served with no
// conversion: its scenarios are in the lab list, its structure.json is a
// track in its order, and a step's text keeps its own braces and <details>
// while {{exec}} becomes a run button on the control plane. (The same
// scenarios run on real clusters in scripts/test's labs test.)
func TestKillercodaScenariosServed(t *testing.T) {
	fake := fakesandbox.New()
	e := startServerWith(t, testConfig(testenv.Postgres(t)), fake, nil, "../labs/testdata/killercoda")
	c := newClient(t, e.url)

	var list []struct {
		ID, Title  string
		Killercoda bool
		Steps      []struct{ ID, Title string }
	}
	c.do("GET", "/api/labs", nil).json(t, &list)
	found := map[string]bool{}
	for _, l := range list {
		if l.ID == "pods-first" && l.Title == "A first Pod" && l.Killercoda && len(l.Steps) == 4 && l.Steps[0].Title == "Run the Pod" {
			found[l.ID] = true
		}
		if l.ID == "node-runtime" && l.Title == "What runs a Pod on node01" && l.Killercoda {
			found[l.ID] = true
		}
	}
	if !found["pods-first"] || !found["node-runtime"] {
		t.Fatalf("the scenarios are not in the lab list as they should be: %+v", list)
	}

	var track struct {
		ID, Title string
		Labs      []struct{ ID string }
	}
	if r := c.do("GET", "/api/tracks/killercoda", nil); r.status != 200 {
		t.Fatalf("the course's track: %d %s", r.status, r.body)
	} else {
		r.json(t, &track)
	}
	if track.Title != "podpath's own Killercoda course" || len(track.Labs) != 2 || track.Labs[0].ID != "pods-first" || track.Labs[1].ID != "node-runtime" {
		t.Errorf("the track from structure.json: %+v", track)
	}

	c.signup("killercoda@example.com")
	r := c.do("POST", "/api/labs/pods-first/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start: %d %s", r.status, r.body)
	}
	var sess struct{ ID string }
	r.json(t, &sess)
	var step struct{ ID, HTML string }
	c.do("GET", "/api/sessions/"+sess.ID+"/steps/step1", nil).json(t, &step)
	text := html.UnescapeString(step.HTML)
	for _, want := range []string{
		"{{ .Release.Name }}", // Helm's braces are text, not a template
		"<details>", "<summary>Tip</summary>",
		`<pre data-node="controlplane" data-run="true"><code class="language-bash">kubectl apply -n practice -f /root/manifests/hello.yaml`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("step 1 lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "{{exec}}") {
		t.Errorf("a marker is left in the text:\n%s", text)
	}

	// Step 2's background script starts when step 2 begins: once step 1
	// is passed, not before. (The fake's nodes pass every script.)
	waitReady(t, c, sess.ID)
	clusters := fake.Clusters()
	if len(clusters) != 1 {
		t.Fatalf("clusters %v", clusters)
	}
	ran := func() string { return strings.Join(fake.Execs(clusters[0]), "\n") }
	if !strings.Contains(ran(), "killercoda-intro-background") || strings.Contains(ran(), "killercoda-step2-background") {
		t.Fatalf("at setup the intro's background starts, and step 2's does not:\n%s", ran())
	}
	if r := c.do("POST", "/api/sessions/"+sess.ID+"/steps/step1/check", nil); r.status != 200 || !strings.Contains(string(r.body), `"passed":true`) {
		t.Fatalf("check step 1: %d %s", r.status, r.body)
	}
	if !strings.Contains(ran(), "--unit killercoda-step2-background") {
		t.Errorf("step 1 passed, and step 2's background did not start:\n%s", ran())
	}

	// The scenario's finish text ends the lab, once every step is done.
	var sv struct {
		Summary *struct {
			FinishHTML string   `json:"finishHtml"`
			Takeaways  []string `json:"takeaways"`
		}
	}
	c.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sv)
	if sv.Summary != nil {
		t.Fatalf("a summary before the last step: %+v", sv.Summary)
	}
	// Step 3's traffic links open the session's port, beside the lab page;
	// the cluster was told its address pattern at setup.
	c.do("GET", "/api/sessions/"+sess.ID+"/steps/step3", nil).json(t, &step)
	for _, want := range []string{
		`<a target="_blank" href="/sessions/` + sess.ID + `/traffic/30080/"`,
		`<a target="_blank" href="/sessions/` + sess.ID + `/traffic"`,
	} {
		if !strings.Contains(step.HTML, want) {
			t.Errorf("step 3 lacks %q:\n%s", want, step.HTML)
		}
	}
	if strings.Contains(step.HTML, "TRAFFIC_") {
		t.Errorf("a traffic variable is left in the text:\n%s", step.HTML)
	}
	if !strings.Contains(ran(), "/etc/killercoda/host") || !strings.Contains(ran(), "http://"+sess.ID+"-PORT.localhost:") {
		t.Errorf("setup did not write /etc/killercoda/host:\n%s", ran())
	}
	// An image of the scenario's folder shows: step 4's ./images/path.png
	// is served from the folder; nothing else of the folder is.
	c.do("GET", "/api/sessions/"+sess.ID+"/steps/step4", nil).json(t, &step)
	if !strings.Contains(step.HTML, `<img src="/labs/pods-first/files/images/path.png" alt="From YAML to a process"`) {
		t.Errorf("step 4's image:\n%s", step.HTML)
	}
	png, _ := os.ReadFile("../labs/testdata/killercoda/pods-first/images/path.png")
	if r := c.do("GET", "/labs/pods-first/files/images/path.png", nil); r.status != 200 || string(r.body) != string(png) || len(png) == 0 {
		t.Errorf("the image: %d, %d bytes (the file has %d)", r.status, len(r.body), len(png))
	}
	for _, p := range []string{"/labs/pods-first/files/verify1.sh", "/labs/pods-first/files/images/none.png", "/labs/pods-first/files/..%2Findex.json", "/labs/pods-first/files/../structure.json", "/labs/no-such-lab/files/images/path.png"} {
		if r := c.do("GET", p, nil); r.status != 404 {
			t.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
	}
	// node-runtime's step 2 text sits in its step2/ folder and shows an
	// image beside it and the course's, from two folders up (as
	// Killercoda resolves them): both are served, the course's only to
	// the labs whose texts show it.
	c2 := newClient(t, e.url)
	c2.signup("killercoda2@example.com")
	r = c2.do("POST", "/api/labs/node-runtime/sessions", nil)
	if r.status != 201 {
		t.Fatalf("start node-runtime: %d %s", r.status, r.body)
	}
	var sess2 struct{ ID string }
	r.json(t, &sess2)
	c2.do("GET", "/api/sessions/"+sess2.ID+"/steps/step2", nil).json(t, &step)
	for _, want := range []string{`<img src="/labs/node-runtime/files/step2/containers.svg" alt="From kubelet to the container"`, `<img alt="The course" src="/labs/node-runtime/shared/assets/course.svg"`} {
		if !strings.Contains(step.HTML, want) {
			t.Errorf("node-runtime's step 2 lacks %s:\n%s", want, step.HTML)
		}
	}
	for p, file := range map[string]string{
		"/labs/node-runtime/files/step2/containers.svg": "../labs/testdata/killercoda/Node Runtime/step2/containers.svg",
		"/labs/node-runtime/shared/assets/course.svg":   "../labs/testdata/killercoda/assets/course.svg",
	} {
		b, _ := os.ReadFile(file)
		if r := c.do("GET", p, nil); r.status != 200 || string(r.body) != string(b) || len(b) == 0 || r.header.Get("Content-Type") != "image/svg+xml" {
			t.Errorf("GET %s: %d %s, %d bytes (the file has %d)", p, r.status, r.header.Get("Content-Type"), len(r.body), len(b))
		}
	}
	for _, p := range []string{"/labs/pods-first/shared/assets/course.svg", "/labs/node-runtime/shared/pods-first/images/path.png",
		"/labs/node-runtime/shared/structure.json", "/labs/node-runtime/shared/assets/../../labs/testdata/killercoda/assets/course.svg", "/labs/node-runtime/shared/..%2F..%2Fserver%2Fkillercoda_test.go"} {
		if r := c.do("GET", p, nil); r.status != 404 {
			t.Errorf("GET %s: %d %s", p, r.status, r.body)
		}
	}

	for _, st := range []string{"step2", "step3", "step4"} {
		if r := c.do("POST", "/api/sessions/"+sess.ID+"/steps/"+st+"/check", nil); r.status != 200 || !strings.Contains(string(r.body), `"passed":true`) {
			t.Fatalf("check %s: %d %s", st, r.status, r.body)
		}
	}
	c.do("GET", "/api/sessions/"+sess.ID, nil).json(t, &sv)
	if sv.Summary == nil || sv.Summary.FinishHTML != "<p>You ran a Pod on a one-node cluster.</p>\n" || len(sv.Summary.Takeaways) != 0 {
		t.Errorf("the end of the lab: %+v", sv.Summary)
	}
}
