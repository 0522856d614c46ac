package server_test

import (
	"context"
	"encoding/csv"
	"github.com/podpath/podpath/accounts"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
)

func (e *env) admin(t *testing.T, email string) (*client, int64) {
	t.Helper()
	c := newClient(t, e.url)
	id := c.signup(email)
	if err := e.store.SetUserRole(context.Background(), id, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	return c, id
}

func (e *env) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql, args...); err != nil {
		t.Fatal(err)
	}
}

// record makes the user's session of lab pass (or fail) the given steps,
// as Check would, and ends it when end is set.
func (e *env) record(t *testing.T, userID int64, lab string, steps map[string]string, end bool) uuid.UUID {
	t.Helper()
	ctx := context.Background()
	sess := e.labSession(t, userID, lab)
	for step, status := range steps {
		a := &store.Attempt{LabSessionID: sess.ID, StepID: step, Kind: store.AttemptCheck, Passed: status == store.StepPassed}
		if status == store.StepSkipped {
			a.Kind, a.Passed = store.AttemptSkip, true
		}
		if err := e.store.RecordAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if end {
		if err := e.store.EndLabSession(ctx, sess.ID, "ended"); err != nil {
			t.Fatal(err)
		}
	}
	return sess.ID
}

func builtinLab(t *testing.T, id string) *labs.Lab {
	t.Helper()
	all, _ := labs.Builtin()
	for _, l := range all {
		if l.ID == id {
			return l
		}
	}
	t.Fatalf("no built-in lab %s", id)
	return nil
}

// account makes a learner account in the database (sign-up is limited per
// address) and signs a client in with it.
func (e *env) account(t *testing.T, email string) *client {
	t.Helper()
	if _, err := e.store.CreateUser(context.Background(), email, email, accountHash, store.RoleLearner); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, e.url)
	r := c.do("POST", "/api/login", map[string]string{"email": email, "password": "correct horse"})
	if r.status != 200 {
		t.Fatalf("login %s: %d %s", email, r.status, r.body)
	}
	var out struct{ CSRFToken string }
	r.json(t, &out)
	c.csrf = out.CSRFToken
	return c
}

var accountHash = func() string {
	h, err := accounts.HashPassword("correct horse")
	if err != nil {
		panic(err)
	}
	return h
}()

type teamJSON struct {
	ID      int64  `json:"id"`
	Name    string `json:"name"`
	Members int    `json:"members"`
}

type inviteJSON struct {
	ID    int64  `json:"id"`
	URL   string `json:"url"`
	Token string `json:"token"`
	Uses  int    `json:"uses"`
}

// Teams end to end without a cluster: an admin makes teams and leads;
// invite links with a use cap, an e-mail domain, an expiry and a revoke;
// leads assign labs with due dates; who may read which report; the
// report's numbers (JSON, CSV, page); "Assigned to you" with overdue
// work on the home page; a member's history.
func TestTeams(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	adm, _ := e.admin(t, "root@example.com")
	ann := newClient(t, e.url)
	ann.signup("ann@corp.example")
	bob := newClient(t, e.url)
	bob.signup("bob@corp.example")

	// Creating teams: only admins; a missing name or an unknown lead is
	// refused and writes nothing.
	if r := ann.do("POST", "/api/admin/teams", map[string]any{"name": "Platform"}); r.status != 403 {
		t.Fatalf("a learner creating a team: %d %s", r.status, r.body)
	}
	for _, bad := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"name": " "}, `"name" is required`},
		{map[string]any{"name": "Platform", "leads": []string{"ann@corp.example", "nobody@corp.example"}}, "podpath user create --email nobody@corp.example"},
		{map[string]any{"name": "Platform", "extra": 1}, "extra"},
	} {
		if r := adm.do("POST", "/api/admin/teams", bad.body); r.status != 400 || !strings.Contains(r.errorMessage(), bad.want) {
			t.Errorf("create team %v: %d %s, want 400 saying %s", bad.body, r.status, r.body, bad.want)
		}
	}
	if n := countRows(t, e, "teams"); n != 0 {
		t.Fatalf("refused creates wrote %d teams", n)
	}
	var teamA, teamB teamJSON
	r := adm.do("POST", "/api/admin/teams", map[string]any{"name": "Platform", "leads": []string{"ann@corp.example"}, "ssoGroup": "platform"})
	if r.status != 201 {
		t.Fatalf("create team: %d %s", r.status, r.body)
	}
	r.json(t, &teamA)
	adm.do("POST", "/api/admin/teams", map[string]any{"name": "Billing", "leads": []string{"bob@corp.example"}}).json(t, &teamB)
	if r := adm.do("POST", "/api/admin/teams", map[string]any{"name": "platform"}); r.status != 409 {
		t.Fatalf("a second team named platform: %d %s", r.status, r.body)
	}
	if r := adm.do("POST", "/api/admin/teams", map[string]any{"name": "Ops", "ssoGroup": "platform"}); r.status != 409 || !strings.Contains(r.errorMessage(), "group") {
		t.Fatalf("a second team on group platform: %d %s", r.status, r.body)
	}
	a := "/api/teams/" + strconv.FormatInt(teamA.ID, 10)

	// Invites: a lead makes them; bad values say what to fix.
	for _, bad := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"maxUses": -1}, `"maxUses"`},
		{map[string]any{"expiresInHours": 100000}, `"expiresInHours"`},
		{map[string]any{"allowedDomain": "not a domain"}, `"allowedDomain"`},
	} {
		if r := ann.do("POST", a+"/invites", bad.body); r.status != 400 || !strings.Contains(r.errorMessage(), bad.want) {
			t.Errorf("invite %v: %d %s, want 400 saying %s", bad.body, r.status, r.body, bad.want)
		}
	}
	if r := bob.do("POST", a+"/invites", map[string]any{}); r.status != 403 {
		t.Fatalf("the lead of another team making an invite: %d %s", r.status, r.body)
	}
	var once inviteJSON
	r = ann.do("POST", a+"/invites", map[string]any{"maxUses": 1, "allowedDomain": "@Corp.Example"})
	if r.status != 201 {
		t.Fatalf("invite: %d %s", r.status, r.body)
	}
	r.json(t, &once)
	if !strings.HasSuffix(once.URL, "/invite/"+once.Token) || len(once.Token) < 30 {
		t.Fatalf("invite link %q, token %q", once.URL, once.Token)
	}
	outsider := newClient(t, e.url)
	outsider.signup("eve@other.example")
	if r := outsider.do("POST", "/api/invites/"+once.Token+"/accept", nil); r.status != 403 || !strings.Contains(r.errorMessage(), "e-mail domain") {
		t.Fatalf("an address outside the domain: %d %s", r.status, r.body)
	}
	mia := newClient(t, e.url)
	miaID := mia.signup("mia@corp.example")
	if r := mia.do("POST", "/api/invites/"+once.Token+"/accept", nil); r.status != 200 {
		t.Fatalf("accept: %d %s", r.status, r.body)
	}
	if r := mia.do("POST", "/api/invites/"+once.Token+"/accept", nil); r.status != 200 {
		t.Fatalf("a member following the link again: %d %s", r.status, r.body)
	}
	noah := newClient(t, e.url)
	noahID := noah.signup("noah@corp.example")
	if r := noah.do("POST", "/api/invites/"+once.Token+"/accept", nil); r.status != 410 || !strings.Contains(r.errorMessage(), "used as often") {
		t.Fatalf("past the use cap: %d %s", r.status, r.body)
	}
	if code, body := noah.page("/invite/" + once.Token); code != 410 || strings.Contains(body, "Platform") {
		t.Fatalf("the page of a used-up link: %d (want 410, naming no team)", code)
	}
	var invites []inviteJSON
	ann.do("GET", a+"/invites", nil).json(t, &invites)
	if len(invites) != 1 || invites[0].Uses != 1 {
		t.Fatalf("invites after a member, a repeat and two refusals: %+v (want 1 use)", invites)
	}
	// Expired and revoked links.
	var exp, rev inviteJSON
	ann.do("POST", a+"/invites", map[string]any{"expiresInHours": 1}).json(t, &exp)
	e.exec(t, `UPDATE team_invites SET expires_at = now() - interval '1 second' WHERE id = $1`, exp.ID)
	if r := noah.do("POST", "/api/invites/"+exp.Token+"/accept", nil); r.status != 410 || !strings.Contains(r.errorMessage(), "expired") {
		t.Fatalf("an expired link: %d %s", r.status, r.body)
	}
	ann.do("POST", a+"/invites", map[string]any{}).json(t, &rev)
	if r := ann.do("DELETE", a+"/invites/"+strconv.FormatInt(rev.ID, 10), nil); r.status != 204 {
		t.Fatalf("revoke: %d %s", r.status, r.body)
	}
	if r := noah.do("POST", "/api/invites/"+rev.Token+"/accept", nil); r.status != 404 {
		t.Fatalf("a revoked link: %d %s", r.status, r.body)
	}
	if code, body := noah.page("/invite/" + rev.Token); code != 404 || !strings.Contains(body, "not valid") {
		t.Fatalf("the page of a revoked link: %d", code)
	}
	// The page of a good link joins with a form post.
	var open inviteJSON
	ann.do("POST", a+"/invites", map[string]any{"allowedDomain": "corp.example"}).json(t, &open)
	if code, body := noah.page("/invite/" + open.Token); code != 200 || !strings.Contains(body, "Platform") || !strings.Contains(body, `id="invite-btn"`) {
		t.Fatalf("invite page: %d", code)
	}
	res, _ := noah.noRedirect().postForm("/invite/"+open.Token, url.Values{"csrf": {noah.formToken("/invite/" + open.Token)}})
	if res.StatusCode != 303 {
		t.Fatalf("joining by the page: %d", res.StatusCode)
	}

	// A lead removes members, not co-leads; the refusal names no team.
	lee := e.account(t, "lee@corp.example")
	var members []server.MemberView
	r = adm.do("POST", "/api/admin/teams/"+strconv.FormatInt(teamA.ID, 10)+"/members", map[string]any{"email": "lee@corp.example", "role": "lead"})
	r.json(t, &members)
	var leeID int64
	for _, m := range members {
		if m.Email == "lee@corp.example" && m.Role == "lead" {
			leeID = m.UserID
		}
	}
	if leeID == 0 {
		t.Fatalf("admin adding a lead: %d %s", r.status, r.body)
	}
	if r := ann.do("DELETE", a+"/members/"+strconv.FormatInt(leeID, 10), nil); r.status != 403 || !strings.Contains(r.errorMessage(), "only admins remove") {
		t.Fatalf("a lead removing a co-lead: %d %s", r.status, r.body)
	}
	if r := bob.do("GET", a, nil); r.status != 403 || strings.Contains(r.errorMessage(), "Platform") {
		t.Fatalf("another team's lead: %d %s (want 403 naming no team)", r.status, r.body)
	}
	if r := adm.do("DELETE", a+"/members/"+strconv.FormatInt(leeID, 10), nil); r.status != 204 {
		t.Fatalf("an admin removing a lead: %d %s", r.status, r.body)
	}
	_ = lee

	// Ten engineers follow a 3-use link at once: exactly three get in.
	var rush inviteJSON
	adm.do("POST", "/api/teams/"+strconv.FormatInt(teamB.ID, 10)+"/invites", map[string]any{"maxUses": 3}).json(t, &rush)
	rushers := make([]*client, 10)
	for i := range rushers {
		rushers[i] = e.account(t, "rush"+strconv.Itoa(i)+"@corp.example")
	}
	codes := make(chan int, len(rushers))
	for _, c := range rushers {
		go func() { codes <- c.do("POST", "/api/invites/"+rush.Token+"/accept", nil).status }()
	}
	got := map[int]int{}
	for range rushers {
		got[<-codes]++
	}
	if got[200] != 3 || got[410] != 7 {
		t.Fatalf("ten at once on a 3-use link: %v, want 3 in and 7 told it is used up", got)
	}
	var b teamJSON
	adm.do("GET", "/api/teams/"+strconv.FormatInt(teamB.ID, 10), nil).json(t, &b)
	if b.Members != 1+3 {
		t.Fatalf("team B has %d members, want its lead and 3", b.Members)
	}

	// Assignments: a lab overdue since yesterday, one due tomorrow.
	for _, bad := range []struct {
		body map[string]any
		want string
	}{
		{map[string]any{"kind": "course", "ref": "scheduler", "dueAt": "2030-01-01"}, `"kind"`},
		{map[string]any{"kind": "lab", "ref": "no-such-lab", "dueAt": "2030-01-01"}, `no lab "no-such-lab"`},
		{map[string]any{"kind": "track", "ref": "no-such-track", "dueAt": "2030-01-01"}, `no track "no-such-track"`},
		{map[string]any{"kind": "lab", "ref": "scheduler", "dueAt": "next friday"}, `"dueAt"`},
	} {
		if r := ann.do("POST", a+"/assignments", bad.body); r.status != 400 || !strings.Contains(r.errorMessage(), bad.want) {
			t.Errorf("assign %v: %d %s, want 400 saying %s", bad.body, r.status, r.body, bad.want)
		}
	}
	if r := mia.do("POST", a+"/assignments", map[string]any{"kind": "lab", "ref": "scheduler", "dueAt": "2030-01-01"}); r.status != 403 {
		t.Fatalf("a member assigning: %d %s", r.status, r.body)
	}
	yesterday := time.Now().Add(-24 * time.Hour).UTC().Format(time.RFC3339)
	tomorrow := time.Now().Add(24 * time.Hour).UTC().Format("2006-01-02")
	if r := ann.do("POST", a+"/assignments", map[string]any{"kind": "lab", "ref": "scheduler", "dueAt": yesterday}); r.status != 201 {
		t.Fatalf("assign: %d %s", r.status, r.body)
	}
	if r := ann.do("POST", a+"/assignments", map[string]any{"kind": "lab", "ref": "yaml-to-process", "dueAt": tomorrow}); r.status != 201 {
		t.Fatalf("assign: %d %s", r.status, r.body)
	}

	// Mia completes yaml-to-process (one step skipped, one failed before
	// passing) and is on scheduler's second step.
	ytp := builtinLab(t, "yaml-to-process")
	steps := map[string]string{}
	for _, st := range ytp.Steps {
		steps[st.ID] = store.StepPassed
	}
	steps[ytp.Steps[1].ID] = store.StepSkipped
	e.record(t, miaID, "yaml-to-process", map[string]string{ytp.Steps[0].ID: store.StepFailed}, true)
	done := e.record(t, miaID, "yaml-to-process", steps, true)
	// Checking a passed step again and failing does not undo the
	// completion; attempts carried into a later session (a workshop reset)
	// count once; a session ended before any check changes nothing.
	ctx := context.Background()
	if err := e.store.RecordAttempt(ctx, &store.Attempt{LabSessionID: done, StepID: ytp.Steps[0].ID, Kind: store.AttemptCheck}); err != nil {
		t.Fatal(err)
	}
	carried := e.labSession(t, miaID, "yaml-to-process")
	var stepIDs []string
	for _, st := range ytp.Steps {
		stepIDs = append(stepIDs, st.ID)
	}
	if err := e.store.CopyProgress(ctx, done, carried.ID, stepIDs[:2]); err != nil {
		t.Fatal(err)
	}
	e.store.EndLabSession(ctx, carried.ID, "ended")
	e.record(t, miaID, "yaml-to-process", nil, true)
	sch := builtinLab(t, "scheduler")
	e.record(t, miaID, "scheduler", map[string]string{sch.Steps[0].ID: store.StepPassed}, false)

	// Who reads the report: the team's lead and admins; not the lead of
	// another team, not a member.
	for _, who := range []struct {
		c    *client
		name string
		want int
	}{{bob, "the lead of team B", 403}, {mia, "a member", 403}, {outsider, "a stranger", 403}, {ann, "the lead", 200}, {adm, "an admin", 200}} {
		if r := who.c.do("GET", a+"/report", nil); r.status != who.want {
			t.Errorf("%s reading team A's report: %d %s, want %d", who.name, r.status, r.body, who.want)
		}
		if code, _ := who.c.page("/teams/" + strconv.FormatInt(teamA.ID, 10)); code != who.want {
			t.Errorf("%s opening team A's page: %d, want %d", who.name, code, who.want)
		}
	}
	var rep server.TeamReport
	ann.do("GET", a+"/report", nil).json(t, &rep)
	if len(rep.Assignments) != 2 || rep.Assignments[0].Ref != "scheduler" {
		t.Fatalf("report assignments: %+v", rep.Assignments)
	}
	byEmail := map[string]*server.ReportMember{}
	for _, m := range rep.Members {
		byEmail[m.Email] = m
	}
	if len(rep.Members) != 3 || byEmail["mia@corp.example"] == nil || byEmail["noah@corp.example"] == nil {
		t.Fatalf("report members: %d", len(rep.Members))
	}
	miaSch, miaYtp := byEmail["mia@corp.example"].Assignments[0], byEmail["mia@corp.example"].Assignments[1]
	if miaSch.Status != "in_progress" || !miaSch.Overdue || miaSch.Labs[0].CurrentStep != sch.Steps[1].ID || miaSch.Attempts != 1 {
		t.Errorf("mia on scheduler: %+v %+v, want in progress on %s, overdue, 1 attempt", miaSch, miaSch.Labs[0], sch.Steps[1].ID)
	}
	if miaYtp.Status != "completed" || miaYtp.Overdue || miaYtp.CompletedAt == nil || miaYtp.Skips != 1 || miaYtp.Attempts != len(ytp.Steps)+2 {
		t.Errorf("mia on yaml-to-process: %+v, want completed, not overdue, 1 skip, %d attempts", miaYtp, len(ytp.Steps)+2)
	}
	noahSch := byEmail["noah@corp.example"].Assignments[0]
	if noahSch.Status != "not_started" || !noahSch.Overdue {
		t.Errorf("noah on scheduler: %+v, want not started and overdue", noahSch)
	}
	// CSV: one row per member, assignment and lab.
	r = ann.do("GET", a+"/report.csv", nil)
	body, bom := strings.CutPrefix(string(r.body), "\ufeff")
	if !bom {
		t.Errorf("report.csv does not start with a UTF-8 byte-order mark: % x", r.body[:min(8, len(r.body))])
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil || r.status != 200 {
		t.Fatalf("report.csv: %d %v", r.status, err)
	}
	if len(rows) != 1+3*2 {
		t.Fatalf("report.csv has %d rows, want a header and 6", len(rows))
	}
	found := false
	for _, row := range rows {
		if row[2] == "mia@corp.example" && row[9] == "yaml-to-process" && row[10] == "completed" && row[13] != "" {
			found = true
		}
	}
	if !found {
		t.Fatalf("report.csv has no completed yaml-to-process row for mia:\n%s", r.body)
	}
	if code, body := ann.page("/teams/" + strconv.FormatInt(teamA.ID, 10)); code != 200 || !strings.Contains(body, "mia@corp.example") || !strings.Contains(body, "overdue") {
		t.Fatalf("team page: %d", code)
	}

	// Mia's home page: both assignments, scheduler overdue with Continue;
	// yaml-to-process done. Her history lists her three sessions.
	var mine []server.MyAssignment
	mia.do("GET", "/api/me/assignments", nil).json(t, &mine)
	if len(mine) != 2 || !mine[0].Progress.Overdue || mine[0].Progress.NextLab != "scheduler" || mine[1].Progress.Status != "completed" {
		t.Fatalf("mia's assignments: %+v", mine)
	}
	_, home := mia.page("/")
	if !strings.Contains(home, `id="assigned"`) || !strings.Contains(home, "overdue-badge") || !strings.Contains(home, "Platform") {
		t.Fatalf("home page without assigned work:\n%s", home)
	}
	if _, home := outsider.page("/"); strings.Contains(home, `id="assigned"`) {
		t.Fatal("a stranger's home page shows assigned work")
	}
	var h server.History
	mia.do("GET", "/api/me/history", nil).json(t, &h)
	if len(h.Sessions) != 5 || h.Sessions[0].Lab != "scheduler" || !h.Sessions[3].Completed || h.Sessions[4].Completed {
		t.Fatalf("history: %+v", h.Sessions)
	}
	if code, body := mia.page("/history"); code != 200 || !strings.Contains(body, ytp.Title.In("en")) {
		t.Fatalf("history page: %d", code)
	}
	var noahHist server.History
	noah.do("GET", "/api/me/history", nil).json(t, &noahHist)
	if len(noahHist.Sessions) != 0 {
		t.Fatalf("noah sees %d sessions in his history", len(noahHist.Sessions))
	}
	_ = noahID

	// A track: its labs in order, yaml-to-process done, scheduler next.
	if r := ann.do("POST", a+"/assignments", map[string]any{"kind": "track", "ref": "from-yaml-to-process", "dueAt": tomorrow}); r.status != 201 {
		t.Fatalf("assign the track: %d %s", r.status, r.body)
	}
	mine = nil
	mia.do("GET", "/api/me/assignments", nil).json(t, &mine)
	var track *server.MyAssignment
	for i := range mine {
		if mine[i].Kind == "track" {
			track = &mine[i]
		}
	}
	all, _ := labs.Builtin()
	guided := 0 // the path's labs: every built-in lab but the challenges
	for _, l := range all {
		if !l.Challenge {
			guided++
		}
	}
	if track == nil || track.Progress.LabsTotal != guided || track.Progress.LabsDone != 1 || track.Progress.NextLab != "scheduler" ||
		track.Progress.Status != "in_progress" || track.Title != "From YAML to a process" {
		t.Fatalf("the track assignment: %+v", track)
	}
}
