package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/oidcprovider"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
)

var ssoUsers = []oidcprovider.User{
	{Username: "ada", Password: "ada-pw", Email: "ada@example.com", EmailVerified: true, Name: "Ada Lovelace", Groups: []string{"platform-eng", "unmapped"}},
	{Username: "lin", Password: "lin-pw", Email: "Lin@Example.com", EmailVerified: true, Name: "Lin at the IdP"},
	{Username: "eve", Password: "eve-pw", Email: "eve@elsewhere.test", EmailVerified: true, Name: "Eve"},
	{Username: "una", Password: "una-pw", Email: "una@example.com", EmailVerified: false, Name: "Una"},
}

// freeAddr is a loopback address nothing listens on (for a server whose
// public URL must be known before it starts). Its port is below the
// kernel's ephemeral range (net.ipv4.ip_local_port_range, 32768 and up):
// an ephemeral port freed here could be taken, before the server listens
// on it, by any outgoing connection of this machine (a port 127.0.0.1:0
// gave was once: "bind: address already in use"); these ports only by
// another listener.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 20000+rand.IntN(12000))
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		ln.Close()
		return addr
	}
	t.Fatal("no free loopback port between 20000 and 32000 in 100 tries")
	return ""
}

// ssoServer starts a real OpenID provider and a podpath server using it.
func ssoServer(t *testing.T, providerAddr string, mutate func(*server.Config)) (*env, *oidcprovider.Provider, server.Config) {
	t.Helper()
	addr := freeAddr(t)
	cfg := testConfig(testenv.Postgres(t))
	cfg.Listen, cfg.PublicURL = addr, "http://"+addr
	cfg.OIDCClientID, cfg.OIDCClientSecret = "podpath", "client-secret"
	cfg.OIDCAllowedDomains = []string{"example.com"}
	var p *oidcprovider.Provider
	if providerAddr == "" {
		var err error
		p, err = oidcprovider.Start(context.Background(), oidcprovider.Options{
			Users: ssoUsers, ClientID: "podpath", ClientSecret: "client-secret", RedirectURIs: []string{cfg.OIDCRedirectURL()},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		cfg.OIDCIssuer = p.Issuer()
	} else {
		cfg.OIDCIssuer = "http://" + providerAddr
	}
	if mutate != nil {
		mutate(&cfg)
	}
	return startServer(t, cfg, fakesandbox.New()), p, cfg
}

// ssoSignIn signs in through the provider's login page in the browser.
func ssoSignIn(ctx context.Context, t *testing.T, e *env, username, password string) {
	t.Helper()
	do(ctx, t,
		chromedp.Navigate(e.url+"/login"),
		chromedp.Click(chromedp.CSS(`#sso-login`)),
		chromedp.WaitVisible(chromedp.CSS(`#username`)),
		chromedp.SendKeys(chromedp.CSS(`#username`), username),
		chromedp.SendKeys(chromedp.CSS(`#password`), password),
		chromedp.Click(chromedp.CSS(`#submit`)),
	)
	poll(ctx, t, "back on podpath", `location.host === "`+strings.TrimPrefix(e.url, "http://")+`" && document.readyState === "complete"`, 30*time.Second)
}

func signOutBrowser(ctx context.Context, t *testing.T) {
	t.Helper()
	if _, err := chromedp.Call(ctx, network.ClearBrowserCookies, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
}

func pageText(ctx context.Context) string {
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	return s
}

func pageStatus(ctx context.Context) int {
	n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`performance.getEntriesByType("navigation")[0].responseStatus`))
	return n
}

type myTeams struct {
	Teams []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
		Role string `json:"role"`
	} `json:"teams"`
	Assignments []struct {
		TeamName string    `json:"teamName"`
		Kind     string    `json:"kind"`
		Ref      string    `json:"ref"`
		DueAt    time.Time `json:"dueAt"`
	} `json:"assignments"`
}

func fetchJSON(ctx context.Context, t *testing.T, path string, v any) {
	t.Helper()
	raw, err := chromedp.Run(ctx, chromedp.Evaluate[string](`fetch("`+path+`").then((r) => r.text())`, chromedp.EvalAsValue, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		t.Fatalf("%s: %v: %s", path, err, raw)
	}
}

// TestSSOBrowser signs in through a real OpenID provider in a real
// browser: the account is made, lands in the team mapped to its group and
// sees the team's assignment; the same callback URL replayed, and one with
// a changed state, are refused with a page that says to start again; an
// existing password account with the same e-mail is linked, not doubled;
// an address outside the allowed domains and an unverified one are
// refused, and no account is made for them; a group taken away at the
// provider takes the user out of the team at the next sign-in.
func TestSSOBrowser(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	e, p, _ := ssoServer(t, "", nil)
	ctx0 := context.Background()
	hash, _ := accounts.HashPassword("an admin password")
	admin, err := e.store.CreateUser(ctx0, "admin@example.com", "Admin", hash, store.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	team, err := e.store.CreateTeam(ctx0, "Platform", "platform-eng", admin.ID)
	if err != nil {
		t.Fatal(err)
	}
	due := time.Now().Add(7 * 24 * time.Hour).Truncate(time.Second)
	if _, err := e.store.Assign(ctx0, team.ID, store.AssignLab, "yaml-to-process", due, admin.ID); err != nil {
		t.Fatal(err)
	}
	linHash, _ := accounts.HashPassword("lin's own password")
	// Lin signed up herself (sign-up is open here).
	lin, err := e.store.SignUp(ctx0, "lin@example.com", "Lin", linHash)
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel, err := browser.New(ctx0, 1280, 800)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 4*time.Minute)
	defer stop()
	var mu sync.Mutex
	var callbacks []string
	if err := chromedp.Listen(ctx, func(ev any) {
		if r, ok := ev.(*network.EventRequestWillBeSent); ok && strings.Contains(r.Request.URL, "/auth/oidc/callback") {
			mu.Lock()
			callbacks = append(callbacks, r.Request.URL)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatal(err)
	}
	lastCallback := func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(callbacks) == 0 {
			t.Fatal("the browser never reached /auth/oidc/callback")
		}
		return callbacks[len(callbacks)-1]
	}

	// The login page offers single sign-on beside the password form.
	do(ctx, t, chromedp.Navigate(e.url+"/login"), chromedp.WaitVisible(chromedp.CSS(`#sso-login`)), chromedp.WaitVisible(chromedp.CSS(`input[name=password]`)))
	if got, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#sso-login`))); got != "Sign in with SSO" {
		t.Errorf("SSO button says %q", got)
	}

	// Sign in: a new account in the team of its group, with its assignment.
	ssoSignIn(ctx, t, e, "ada", "ada-pw")
	poll(ctx, t, "the home page, signed in", `location.pathname === "/" && document.querySelector(".who") !== null`, 20*time.Second)
	if who, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.who`))); who != "Ada Lovelace" {
		t.Errorf("signed in as %q", who)
	}
	var mine myTeams
	fetchJSON(ctx, t, "/api/me/teams", &mine)
	if len(mine.Teams) != 1 || mine.Teams[0].Name != "Platform" || mine.Teams[0].Role != store.TeamMember || mine.Teams[0].ID != team.ID {
		t.Errorf("teams: %+v", mine.Teams)
	}
	if len(mine.Assignments) != 1 || mine.Assignments[0].TeamName != "Platform" || mine.Assignments[0].Kind != "lab" ||
		mine.Assignments[0].Ref != "yaml-to-process" || !mine.Assignments[0].DueAt.Equal(due) {
		t.Errorf("assignments: %+v", mine.Assignments)
	}
	var me struct {
		User struct {
			ID    int64  `json:"id"`
			Email string `json:"email"`
			Role  string `json:"role"`
		} `json:"user"`
	}
	fetchJSON(ctx, t, "/api/me", &me)
	if me.User.Email != "ada@example.com" || me.User.Role != store.RoleLearner {
		t.Errorf("/api/me: %+v", me.User)
	}
	shot(ctx, t, "sso-home")
	ada, err := e.store.UserByIdentity(ctx0, p.Issuer(), "ada")
	if err != nil || ada.ID != me.User.ID || ada.PasswordHash != "" || ada.LastLoginAt == nil {
		t.Fatalf("identity of ada: %+v, %v", ada, err)
	}
	// An SSO account has no password to sign in with.
	pc := newClient(t, e.url)
	if r := pc.do("POST", "/api/login", map[string]string{"email": "ada@example.com", "password": ""}); r.status != http.StatusBadRequest {
		t.Errorf("password sign-in with an empty password: %d", r.status)
	}

	// The same callback again: the state was used, so it is refused.
	callback := lastCallback()
	signOutBrowser(ctx, t)
	do(ctx, t, chromedp.Navigate(callback))
	if st, text := pageStatus(ctx), pageText(ctx); st != http.StatusBadRequest || !strings.Contains(text, "could not be verified") || !strings.Contains(text, "Start the sign-in again") {
		t.Errorf("replayed callback: %d %q", st, text)
	}
	shot(ctx, t, "sso-replayed")
	if ok, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#start-again").getAttribute("href") === "/login"`)); !ok {
		t.Error("the refusal page has no link to /login")
	}
	// A changed state, while a sign-in of this browser is under way.
	do(ctx, t, chromedp.Navigate(e.url+"/auth/oidc/login"), chromedp.WaitVisible(chromedp.CSS(`#username`)))
	u, _ := url.Parse(callback)
	q := u.Query()
	q.Set("state", "x"+q.Get("state")[1:])
	u.RawQuery = q.Encode()
	do(ctx, t, chromedp.Navigate(u.String()))
	if st, text := pageStatus(ctx), pageText(ctx); st != http.StatusBadRequest || !strings.Contains(text, "could not be verified") {
		t.Errorf("tampered state: %d %q", st, text)
	}
	fetchJSON(ctx, t, "/api/me", &map[string]any{}) // signed out: an error body, no user
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.cookie.includes("podpath_session")`)); n {
		t.Error("a refused callback signed in")
	}

	// Linking: Lin had a password account; SSO signs into the same one.
	// She made it by signing up, so nobody verified the address: linking
	// takes its password and ends its sign-ins.
	linAPI := newClient(t, e.url)
	if r := linAPI.do("POST", "/api/login", map[string]string{"email": "lin@example.com", "password": "lin's own password"}); r.status != 200 {
		t.Fatalf("Lin's password sign-in before SSO: %d %s", r.status, r.body)
	}
	signOutBrowser(ctx, t)
	ssoSignIn(ctx, t, e, "lin", "lin-pw")
	poll(ctx, t, "Lin's home page", `location.pathname === "/" && document.querySelector(".who") !== null`, 20*time.Second)
	fetchJSON(ctx, t, "/api/me", &me)
	if me.User.ID != lin.ID {
		t.Errorf("SSO signed Lin into account %d, not her account %d", me.User.ID, lin.ID)
	}
	if got, err := e.store.UserByIdentity(ctx0, p.Issuer(), "lin"); err != nil || got.ID != lin.ID || got.PasswordHash != "" {
		t.Errorf("Lin's identity: %+v, %v (want her account, its password gone)", got, err)
	}
	if r := linAPI.do("GET", "/api/me", nil); r.status != 401 {
		t.Errorf("the password sign-in made before linking still works: %d", r.status)
	}
	if r := newClient(t, e.url).do("POST", "/api/login", map[string]string{"email": "lin@example.com", "password": "lin's own password"}); r.status != 401 {
		t.Errorf("the old password after linking: %d %s", r.status, r.body)
	}
	if who, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`.who`))); who != "Lin" {
		t.Errorf("linking renamed the account: %q", who)
	}

	// An address outside the allowed domains: 403 naming them, no account.
	signOutBrowser(ctx, t)
	ssoSignIn(ctx, t, e, "eve", "eve-pw")
	if st, text := pageStatus(ctx), pageText(ctx); st != http.StatusForbidden || !strings.Contains(text, "example.com") || !strings.Contains(text, "eve@elsewhere.test") {
		t.Errorf("outside the domains: %d %q", st, text)
	}
	shot(ctx, t, "sso-domain")
	if _, err := e.store.UserByEmail(ctx0, "eve@elsewhere.test"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an account was made for an address outside the domains: %v", err)
	}

	// An unverified address: refused, no account.
	signOutBrowser(ctx, t)
	ssoSignIn(ctx, t, e, "una", "una-pw")
	if st, text := pageStatus(ctx), pageText(ctx); st != http.StatusForbidden || !strings.Contains(text, "not verified") {
		t.Errorf("unverified: %d %q", st, text)
	}
	if _, err := e.store.UserByEmail(ctx0, "una@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an account was made for an unverified address: %v", err)
	}

	// The provider takes Ada out of the group: the next sign-in takes her
	// out of the team single sign-on put her in.
	p.SetUser(oidcprovider.User{Username: "ada", Password: "ada-pw", Email: "ada@example.com", EmailVerified: true, Name: "Ada Lovelace", Groups: []string{}})
	signOutBrowser(ctx, t)
	ssoSignIn(ctx, t, e, "ada", "ada-pw")
	poll(ctx, t, "Ada's home page", `location.pathname === "/" && document.querySelector(".who") !== null`, 20*time.Second)
	mine = myTeams{}
	fetchJSON(ctx, t, "/api/me/teams", &mine)
	if len(mine.Teams) != 0 || len(mine.Assignments) != 0 {
		t.Errorf("after leaving the group: %+v", mine)
	}
	fetchJSON(ctx, t, "/api/me", &me)
	if me.User.ID != ada.ID {
		t.Errorf("second sign-in made another account: %d, not %d", me.User.ID, ada.ID)
	}
}

// TestSSOPasswordOff turns passwords off: the login page shows only the
// single sign-on button, and password sign-in is refused, for admins too,
// on the form and the API, with what to do instead.
func TestSSOPasswordOff(t *testing.T) {
	e, _, _ := ssoServer(t, "", func(c *server.Config) { c.PasswordLogin, c.AllowSignup = false, false })
	hash, _ := accounts.HashPassword("an admin password")
	if _, err := e.store.CreateUser(context.Background(), "root@example.com", "Root", hash, store.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	c := newClient(t, e.url)
	status, html := c.page("/login")
	if status != 200 || !strings.Contains(html, `id="sso-login"`) || strings.Contains(html, `name="password"`) {
		t.Fatalf("login page with passwords off (%d): %s", status, html)
	}
	token := csrfField.FindStringSubmatch(html)
	if token == nil {
		// The form is gone, but its CSRF cookie is still made: post it by hand.
		token = []string{"", cookieValue(c, e.url, "podpath_csrf")}
	}
	res, body := c.postForm("/login", url.Values{"csrf": {token[1]}, "email": {"root@example.com"}, "password": {"an admin password"}})
	if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "Password sign-in is turned off") {
		t.Errorf("POST /login with passwords off: %d %s", res.StatusCode, body)
	}
	r := c.do("POST", "/api/login", map[string]string{"email": "root@example.com", "password": "an admin password"})
	if r.status != http.StatusForbidden || !strings.Contains(r.errorMessage(), "single sign-on") {
		t.Errorf("POST /api/login with passwords off: %d %s", r.status, r.body)
	}
	r = c.do("POST", "/api/signup", map[string]string{"email": "new@example.com", "password": "a good password"})
	if r.status != http.StatusForbidden {
		t.Errorf("POST /api/signup with passwords off: %d %s", r.status, r.body)
	}
}

func cookieValue(c *client, base, name string) string {
	for _, ck := range c.http.Jar.Cookies(mustURL(base)) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}

// TestSSOProviderDown starts podpath while the provider is down: it
// serves, the SSO button answers with a clear page, and once the provider
// is up the next try sends the browser there with a state, a nonce and a
// PKCE S256 challenge.
func TestSSOProviderDown(t *testing.T) {
	paddr := freeAddr(t)
	e, _, cfg := ssoServer(t, paddr, nil)
	c := newClient(t, e.url).noRedirect()
	if st, _ := c.page("/login"); st != 200 {
		t.Fatalf("login page: %d", st)
	}
	st, html := c.page("/auth/oidc/login")
	if st != http.StatusServiceUnavailable || !strings.Contains(html, "Single sign-on is not available right now") {
		t.Fatalf("SSO while the provider is down: %d %s", st, html)
	}
	p, err := oidcprovider.Start(context.Background(), oidcprovider.Options{Addr: paddr, Users: ssoUsers,
		ClientID: "podpath", ClientSecret: "client-secret", RedirectURIs: []string{cfg.OIDCRedirectURL()}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	time.Sleep(5100 * time.Millisecond) // the failure is remembered for 5 s
	res, err := c.http.Get(e.url + "/auth/oidc/login?next=/labs")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := res.Location()
	if res.StatusCode != http.StatusFound || err != nil || !strings.HasPrefix(loc.String(), p.Issuer()) {
		t.Fatalf("SSO once the provider is up: %d %v", res.StatusCode, loc)
	}
	q := loc.Query()
	if q.Get("client_id") != "podpath" || q.Get("redirect_uri") != cfg.OIDCRedirectURL() || q.Get("code_challenge_method") != "S256" ||
		len(q.Get("code_challenge")) < 43 || len(q.Get("state")) < 40 || len(q.Get("nonce")) < 40 || !strings.Contains(q.Get("scope"), "groups") {
		t.Errorf("authorization request: %s", loc)
	}
}
