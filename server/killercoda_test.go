package server_test

import (
	"html"
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
	e := startServerWith(t, testConfig(testenv.Postgres(t)), fakesandbox.New(), nil, "../labs/testdata/killercoda")
	c := newClient(t, e.url)

	var list []struct {
		ID, Title  string
		Killercoda bool
		Steps      []struct{ ID, Title string }
	}
	c.do("GET", "/api/labs", nil).json(t, &list)
	found := map[string]bool{}
	for _, l := range list {
		if l.ID == "pods-first" && l.Title == "A first Pod" && l.Killercoda && len(l.Steps) == 3 && l.Steps[0].Title == "Run the Pod" {
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
}
