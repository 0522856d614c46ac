package server_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

// signInBrowser signs in with the password form.
func signInBrowser(ctx context.Context, t *testing.T, e *env, email string) {
	t.Helper()
	do(ctx, t,
		chromedp.Navigate(e.url+"/login"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "correct horse"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
	)
	poll(ctx, t, "signed in", `location.pathname === "/" && document.querySelector(".who") !== null`, 20*time.Second)
}

// TestTeamsInBrowser is a lead and a new member, each in their own browser:
// the lead opens the team from the home page, assigns the track with a due
// date and makes an invite link for the company's domain in the page's
// forms; the member follows the link, joins, and finds the track under
// "Assigned to you" (in Chinese too); the lead's report then lists them.
// A lab in the form that the lead mistypes is refused on the page.
func TestTeamsInBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	bg := context.Background()
	e.account(t, "ann@corp.example")
	e.account(t, "mo@corp.example")
	ann, _ := e.store.UserByEmail(bg, "ann@corp.example")
	team, err := e.store.CreateTeam(bg, "Platform", "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.store.AddTeamMember(bg, team.ID, ann.ID, store.TeamLead, store.ViaAdmin); err != nil {
		t.Fatal(err)
	}
	teamPath := "/teams/" + strconv.FormatInt(team.ID, 10)

	lead, cancel, err := browser.New(bg, 1366, 900)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	lead, stop := context.WithTimeout(lead, 3*time.Minute)
	defer stop()
	signInBrowser(lead, t, e, "ann@corp.example")
	do(lead, t, chromedp.Click(chromedp.CSS(`#led-teams a[href="`+teamPath+`"]`)))
	poll(lead, t, "the team page", `location.pathname === "`+teamPath+`" && document.querySelector("#assign-form") !== null`, 20*time.Second)

	// A tampered option is refused with what to fix; the real one lands.
	if _, err := chromedp.Run(lead, chromedp.Evaluate[bool](`(document.querySelector("#assign-ref").options[0].value = "lab:no-such-lab", document.querySelector("#assign-ref").selectedIndex = 0, true)`)); err != nil {
		t.Fatal(err)
	}
	do(lead, t, chromedp.Click(chromedp.CSS(`#assign-btn`)))
	poll(lead, t, "the refusal", `document.querySelector("#team-error") !== null`, 20*time.Second)
	if msg, _ := chromedp.Run(lead, chromedp.Text(chromedp.CSS(`#team-error`))); !strings.Contains(msg, `no lab "no-such-lab"`) {
		t.Errorf("a mistyped lab: %q", msg)
	}
	due := time.Now().Add(10 * 24 * time.Hour).UTC().Format("2006-01-02")
	do(lead, t,
		chromedp.SetValue(chromedp.CSS(`#assign-ref`), "track:from-yaml-to-process"),
		chromedp.SetValue(chromedp.CSS(`#assign-due`), due),
		chromedp.Click(chromedp.CSS(`#assign-btn`)),
	)
	poll(lead, t, "the assignment", `document.querySelector('#assignment-list li[data-ref="from-yaml-to-process"]') !== null`, 20*time.Second)
	do(lead, t,
		chromedp.SetValue(chromedp.CSS(`#invite-uses`), "5"),
		chromedp.SendKeys(chromedp.CSS(`#invite-domain`), "corp.example"),
		chromedp.Click(chromedp.CSS(`#invite-btn`)),
	)
	poll(lead, t, "the invite link", `document.querySelector("#invite-url") !== null`, 20*time.Second)
	link, _ := chromedp.Run(lead, chromedp.Value(chromedp.CSS(`#invite-url`)))
	if !strings.HasPrefix(link, e.url+"/invite/") {
		t.Fatalf("invite link %q", link)
	}
	if list, _ := chromedp.Run(lead, chromedp.Text(chromedp.CSS(`#invite-list`))); !strings.Contains(list, "0/5") || !strings.Contains(list, "@corp.example") {
		t.Errorf("the invite list: %q", list)
	}

	member, cancel2, err := browser.New(bg, 1366, 820)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel2()
	member, stop2 := context.WithTimeout(member, 3*time.Minute)
	defer stop2()
	signInBrowser(member, t, e, "mo@corp.example")
	do(member, t, chromedp.Navigate(link))
	poll(member, t, "the invite page", `document.querySelector("#invite-btn") !== null`, 20*time.Second)
	if h1, _ := chromedp.Run(member, chromedp.Text(chromedp.CSS(`h1`))); h1 != "Platform" {
		t.Errorf("the invite page names %q", h1)
	}
	do(member, t, chromedp.Click(chromedp.CSS(`#invite-btn`)))
	poll(member, t, "assigned work", `document.querySelector('#assigned .assignment[data-ref="from-yaml-to-process"]') !== null`, 20*time.Second)
	card, _ := chromedp.Run(member, chromedp.Text(chromedp.CSS(`#assigned`)))
	if !strings.Contains(card, "From YAML to a process") || !strings.Contains(card, "due "+due) || !strings.Contains(card, "0/14") {
		t.Errorf("Assigned to you: %q", card)
	}
	shot(member, t, "team-assigned")
	do(member, t, chromedp.Navigate(e.url+"/?lang=zh"))
	poll(member, t, "the Chinese home page", `document.querySelector("#assigned h2") !== null && document.querySelector("#assigned h2").innerText === "分配给你的"`, 20*time.Second)
	shot(member, t, "team-assigned-zh")

	do(lead, t, chromedp.Navigate(e.url+teamPath))
	poll(lead, t, "the member in the report", `document.querySelector("#team-report") !== null && document.querySelector("#team-report").innerText.includes("mo@corp.example")`, 20*time.Second)
	if list, _ := chromedp.Run(lead, chromedp.Text(chromedp.CSS(`#invite-list`))); !strings.Contains(list, "1/5") {
		t.Errorf("the invite list after a join: %q", list)
	}
	shot(lead, t, "team-report")
}
