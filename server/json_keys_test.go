package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

// jsonKeys lists the keys of a JSON document as paths, "memberList[].userId";
// a key some elements of an array lack (omitempty) ends in "?".
func jsonKeys(t *testing.T, body []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, body)
	}
	return slices.Sorted(maps.Keys(shape(v)))
}

func shape(v any) map[string]bool {
	out := map[string]bool{}
	join := func(prefix, sub string) string {
		if strings.HasPrefix(sub, "[") {
			return prefix + sub
		}
		return prefix + "." + sub
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			out[k] = true
			for sub := range shape(e) {
				out[join(k, sub)] = true
			}
		}
	case []any:
		count := map[string]int{}
		for _, e := range x {
			for sub := range shape(e) {
				count[sub]++
			}
		}
		for sub, n := range count {
			p := join("[]", sub)
			if p == "[]."+sub && strings.HasPrefix(sub, "[") {
				p = "[]" + sub
			}
			if n < len(x) && !strings.HasSuffix(p, "?") {
				p += "?"
			}
			out[p] = true
		}
	}
	return out
}

// The JSON keys of the teams API and the take-over log, as clients read
// them. They were written when these answers were store rows with JSON
// tags; the answers are views now, and must say the same.
func TestTeamsJSONKeys(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	ctx := context.Background()
	adm, _ := e.admin(t, "root@example.com")
	lead := newClient(t, e.url)
	lead.signup("lead@corp.example")
	e.account(t, "mia@corp.example")

	got := map[string][]string{}
	call := func(name string, c *client, method, path string, body any, status int) response {
		t.Helper()
		r := c.do(method, path, body)
		if r.status != status {
			t.Fatalf("%s: %d %s", name, r.status, r.body)
		}
		got[name] = jsonKeys(t, r.body)
		return r
	}
	var team struct{ ID int64 }
	call("create team", adm, "POST", "/api/admin/teams", map[string]any{"name": "Platform", "leads": []string{"lead@corp.example"}}, 201).json(t, &team)
	a := "/api/teams/" + strconv.FormatInt(team.ID, 10)
	call("set group", adm, "PUT", "/api/admin/teams/"+strconv.FormatInt(team.ID, 10)+"/sso-group", map[string]any{"ssoGroup": "platform"}, 200)
	call("add member", adm, "POST", "/api/admin/teams/"+strconv.FormatInt(team.ID, 10)+"/members", map[string]any{"email": "mia@corp.example"}, 200)
	var inv struct{ Token string }
	call("create invite", lead, "POST", a+"/invites", map[string]any{"allowedDomain": "corp.example"}, 201).json(t, &inv)
	call("invites", lead, "GET", a+"/invites", nil, 200)
	call("assign", lead, "POST", a+"/assignments", map[string]any{"kind": "track", "ref": "from-yaml-to-process", "dueAt": "2020-01-01"}, 201)
	joiner := newClient(t, e.url)
	joinerID := joiner.signup("noah@corp.example")
	call("accept invite", joiner, "POST", "/api/invites/"+inv.Token+"/accept", nil, 200)
	// Noah completes the track's first lab; the report shows it.
	first := builtinLab(t, "yaml-to-process")
	steps := map[string]string{}
	for _, st := range first.Steps {
		steps[st.ID] = store.StepPassed
	}
	e.record(t, joinerID, first.ID, steps, true)
	e.record(t, joinerID, "scheduler", map[string]string{"selector": store.StepSkipped}, true)
	call("team", lead, "GET", a, nil, 200)
	call("teams (admin)", adm, "GET", "/api/teams", nil, 200)
	call("teams (lead)", lead, "GET", "/api/teams", nil, 200)
	call("my teams", joiner, "GET", "/api/me/teams", nil, 200)
	call("report", lead, "GET", a+"/report", nil, 200)
	call("my assignments", joiner, "GET", "/api/me/assignments", nil, 200)
	call("my history", joiner, "GET", "/api/me/history", nil, 200)

	// The take-over log: one open take-over, one ended.
	grace := e.staffNamed(t, "grace@example.com", "Grace")
	var w struct {
		ID   int64
		Code string
	}
	call("create workshop", grace, "POST", "/api/workshops", map[string]any{"title": "Class", "labs": []string{first.ID}, "seats": 2,
		"startsAt": time.Now().Add(-time.Minute), "endsAt": time.Now().Add(time.Hour), "prepare": 0}, 201).json(t, &w)
	var grc struct{ User struct{ ID int64 } }
	grace.do("GET", "/api/me", nil).json(t, &grc)
	sess := e.labSession(t, joinerID, first.ID)
	e.exec(t, `UPDATE lab_sessions SET workshop_id = $1 WHERE id = $2`, w.ID, sess.ID)
	if _, _, _, err := e.store.JoinWorkshop(ctx, w.ID, joinerID, "Noah", nil); err != nil {
		t.Fatal(err)
	}
	ended := &store.Takeover{WorkshopID: w.ID, InstructorID: grc.User.ID, LearnerID: joinerID, LabSession: &sess.ID, Node: "node01"}
	if err := e.store.StartTakeover(ctx, ended); err != nil {
		t.Fatal(err)
	}
	if err := e.store.EndTakeover(ctx, ended.ID, "learner"); err != nil {
		t.Fatal(err)
	}
	if err := e.store.StartTakeover(ctx, &store.Takeover{WorkshopID: w.ID, InstructorID: grc.User.ID, LearnerID: joinerID, Node: "controlplane"}); err != nil {
		t.Fatal(err)
	}
	call("takeovers", grace, "GET", "/api/workshops/"+strconv.FormatInt(w.ID, 10)+"/takeovers", nil, 200)
	delete(got, "create workshop") // a view already; only its id was wanted

	if os.Getenv("PODPATH_PRINT_KEYS") != "" {
		var b strings.Builder
		for _, name := range slices.Sorted(maps.Keys(got)) {
			fmt.Fprintf(&b, "\t%q: %q,\n", name, strings.Join(got[name], " "))
		}
		t.Logf("keys:\n%s", b.String())
	}
	for name, want := range wantJSONKeys {
		if g := strings.Join(got[name], " "); g != want {
			t.Errorf("%s: the keys changed\n got: %s\nwant: %s", name, g, want)
		}
	}
	for name := range got {
		if _, ok := wantJSONKeys[name]; !ok {
			t.Errorf("%s: no keys pinned", name)
		}
	}
}

// wantJSONKeys were read from the answers of store rows with JSON tags
// (PODPATH_PRINT_KEYS=1 prints what the server says now).
var wantJSONKeys = map[string]string{
	"accept invite":  "createdAt id members name ssoGroup",
	"add member":     "[].email [].joinedAt [].name [].role [].userId [].via",
	"assign":         "createdAt dueAt id kind labs ref teamId teamName title",
	"create invite":  "allowedDomain createdAt expiresAt id maxUses teamId token url uses",
	"create team":    "createdAt id members name",
	"invites":        "[].allowedDomain [].createdAt [].expiresAt [].id [].maxUses [].teamId [].uses",
	"my assignments": "[].createdAt [].dueAt [].id [].kind [].labs [].progress [].progress.assignmentId [].progress.attempts [].progress.labs [].progress.labsDone [].progress.labsTotal [].progress.labs[].attempts [].progress.labs[].completedAt? [].progress.labs[].currentStep? [].progress.labs[].lab [].progress.labs[].skips [].progress.labs[].startedAt? [].progress.labs[].status [].progress.labs[].title [].progress.nextLab [].progress.overdue [].progress.skips [].progress.status [].progress.timeSpentSeconds [].ref [].teamId [].teamName [].title",
	"my history":     "labs labs[].attempts labs[].completedAt? labs[].currentStep? labs[].lab labs[].skips labs[].startedAt labs[].status labs[].title sessions sessions[].active sessions[].attempts sessions[].completed sessions[].endedAt sessions[].lab sessions[].session sessions[].skips sessions[].startedAt sessions[].steps sessions[].stepsDone sessions[].title",
	"my teams":       "assignments assignments[].createdAt assignments[].dueAt assignments[].id assignments[].kind assignments[].labs assignments[].progress assignments[].progress.assignmentId assignments[].progress.attempts assignments[].progress.labs assignments[].progress.labsDone assignments[].progress.labsTotal assignments[].progress.labs[].attempts assignments[].progress.labs[].completedAt? assignments[].progress.labs[].currentStep? assignments[].progress.labs[].lab assignments[].progress.labs[].skips assignments[].progress.labs[].startedAt? assignments[].progress.labs[].status assignments[].progress.labs[].title assignments[].progress.nextLab assignments[].progress.overdue assignments[].progress.skips assignments[].progress.status assignments[].progress.timeSpentSeconds assignments[].ref assignments[].teamId assignments[].teamName assignments[].title teams teams[].createdAt teams[].id teams[].members teams[].name teams[].role teams[].ssoGroup",
	"report":         "assignments assignments[].createdAt assignments[].dueAt assignments[].id assignments[].kind assignments[].labs assignments[].ref assignments[].teamId assignments[].teamName assignments[].title generatedAt members members[].assignments members[].assignments[].assignmentId members[].assignments[].attempts members[].assignments[].labs members[].assignments[].labsDone members[].assignments[].labsTotal members[].assignments[].labs[].attempts members[].assignments[].labs[].completedAt? members[].assignments[].labs[].currentStep? members[].assignments[].labs[].lab members[].assignments[].labs[].skips members[].assignments[].labs[].startedAt? members[].assignments[].labs[].status members[].assignments[].labs[].title members[].assignments[].nextLab members[].assignments[].overdue members[].assignments[].skips members[].assignments[].status members[].assignments[].timeSpentSeconds members[].email members[].joinedAt members[].name members[].role members[].userId members[].via team team.createdAt team.id team.members team.name team.ssoGroup",
	"set group":      "createdAt id members name ssoGroup",
	"takeovers":      "[].endedAt? [].endedBy? [].id [].instructor [].instructorId [].labSessionId? [].learner [].learnerId [].node [].seconds [].startedAt [].workshopId",
	"team":           "assignments assignments[].createdAt assignments[].dueAt assignments[].id assignments[].kind assignments[].labs assignments[].ref assignments[].teamId assignments[].teamName assignments[].title createdAt id invites invites[].allowedDomain invites[].createdAt invites[].expiresAt invites[].id invites[].maxUses invites[].teamId invites[].uses memberList memberList[].email memberList[].joinedAt memberList[].name memberList[].role memberList[].userId memberList[].via members name ssoGroup",
	"teams (admin)":  "[].createdAt [].id [].members [].name [].role [].ssoGroup",
	"teams (lead)":   "[].createdAt [].id [].members [].name [].role [].ssoGroup",
}
