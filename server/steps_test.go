package server_test

import (
	"context"
	"html"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
)

// Every step of every built-in lab renders for a session, in both
// languages, through the API the lab page calls when a learner passes a
// step or picks another: the session's own values filled in (a lab with
// values: rendered from the catalog failed with 500), nothing left
// unfilled. No cluster: the sandbox is a fake.
func TestEveryStepRendersForASession(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	c.signup("every-step@example.com")
	all, _ := labs.Builtin()
	withValues := 0
	for _, l := range all {
		r := c.do("POST", "/api/labs/"+l.ID+"/sessions", nil)
		if r.status != 201 {
			t.Fatalf("start %s: %d %s", l.ID, r.status, r.body)
		}
		var sess struct{ ID string }
		r.json(t, &sess)
		stored, err := e.store.LabSession(context.Background(), uuid.MustParse(sess.ID))
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Values) > 0 {
			withValues++
			if len(stored.Values) != len(l.Values) {
				t.Errorf("%s: the session drew %v for %d values", l.ID, stored.Values, len(l.Values))
			}
		}
		// Which of the session's values the steps' text names, and so must show.
		shown := map[string]bool{}
		for _, lg := range []string{"en", "zh"} {
			var text strings.Builder
			for _, st := range l.Steps {
				r := c.do("GET", "/api/sessions/"+sess.ID+"/steps/"+st.ID+"?lang="+lg, nil)
				if r.status != 200 {
					t.Errorf("%s step %s (%s): %d %s", l.ID, st.ID, lg, r.status, r.body)
					continue
				}
				var v struct {
					ID, Title, HTML string
				}
				r.json(t, &v)
				if v.ID != st.ID || strings.TrimSpace(v.HTML) == "" {
					t.Errorf("%s step %s (%s): id %q, html %q", l.ID, st.ID, lg, v.ID, v.HTML)
				}
				if strings.Contains(v.HTML, "{{") || strings.Contains(v.HTML, "<no value>") {
					t.Errorf("%s step %s (%s) has an unfilled template:\n%s", l.ID, st.ID, lg, v.HTML)
				}
				text.WriteString(html.UnescapeString(v.HTML))
				for name := range stored.Values {
					if strings.Contains(st.Body.In(lg), ".Values."+name) {
						shown[name] = true
					}
				}
			}
			for name := range shown {
				if !strings.Contains(text.String(), stored.Values[name]) {
					t.Errorf("%s (%s): the steps name value %s, but the session's %q is not in their text", l.ID, lg, name, stored.Values[name])
				}
			}
		}
		if r := c.do("DELETE", "/api/sessions/"+sess.ID, nil); r.status != 204 && r.status != 200 {
			t.Fatalf("end %s: %d %s", l.ID, r.status, r.body)
		}
	}
	if withValues < 4 {
		t.Errorf("%d built-in labs declare values; the labs that broke were 02, 06, 09 and 10", withValues)
	}
}
