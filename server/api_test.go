package server_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/sandbox"
	"github.com/podpath/podpath/session"
)

func countRows(t *testing.T, e *env, table string) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The API answers bad input with the right status and a message that says
// what to do, and writes nothing.
func TestAPIBadInput(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), session.Manager(sandbox.NewManager()))
	c := newClient(t, e.url)

	cases := []struct {
		name, method, path string
		body               any
		headers            []string
		status             int
		message            string
	}{
		{"malformed JSON", "POST", "/api/signup", `{"email": "a@b.co", "password": `, nil, 400, "malformed JSON"},
		{"not an object", "POST", "/api/signup", `[1,2]`, nil, 400, "must be a"},
		{"unknown field", "POST", "/api/signup", `{"email":"a@b.co","password":"long enough","admin":true}`, nil, 400, `unknown field "admin"`},
		{"two objects", "POST", "/api/signup", `{"email":"a@b.co","password":"long enough"}{}`, nil, 400, "one JSON object"},
		{"empty body", "POST", "/api/signup", ``, nil, 400, "empty"},
		{"wrong content type", "POST", "/api/signup", `email=a@b.co`, []string{"Content-Type", "application/x-www-form-urlencoded"}, 415, "Content-Type: application/json"},
		{"bad email", "POST", "/api/signup", map[string]string{"email": "not-an-email", "password": "long enough"}, nil, 400, "email address"},
		{"short password", "POST", "/api/signup", map[string]string{"email": "a@b.co", "password": "short"}, nil, 400, "at least 8 characters"},
		{"huge body", "POST", "/api/signup", `{"email":"` + strings.Repeat("a", 2<<20) + `"}`, nil, 413, "too large"},
		{"login without password", "POST", "/api/login", map[string]string{"email": "a@b.co"}, nil, 400, "send email and password"},
		{"not signed in", "GET", "/api/me", nil, nil, 401, "sign in first"},
		{"not signed in start", "POST", "/api/labs/yaml-to-process/sessions", nil, nil, 401, "sign in first"},
		{"unknown endpoint", "GET", "/api/nope", nil, nil, 404, "no API endpoint GET /api/nope"},
		{"unknown lab", "GET", "/api/labs/no-such-lab", nil, nil, 404, "GET /api/labs lists them"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := c.do(tc.method, tc.path, tc.body, tc.headers...)
			if r.status != tc.status || !strings.Contains(r.errorMessage(), tc.message) {
				t.Errorf("%s %s: %d %s; want %d with %q", tc.method, tc.path, r.status, r.body, tc.status, tc.message)
			}
		})
	}
	if n := countRows(t, e, "users"); n != 0 {
		t.Errorf("bad sign-ups left %d users", n)
	}

	c.signup("learner@example.com")
	if r := c.do("POST", "/api/signup", map[string]string{"email": "LEARNER@example.com", "password": "long enough"}); r.status != 409 || !strings.Contains(r.errorMessage(), "sign in instead") {
		t.Errorf("duplicate sign-up: %d %s", r.status, r.body)
	}
	if n := countRows(t, e, "users"); n != 1 {
		t.Errorf("%d users after a duplicate sign-up, want 1", n)
	}

	// Cookie-authenticated writes need the CSRF token.
	token := c.csrf
	c.csrf = ""
	r := c.do("POST", "/api/labs/no-such-lab/sessions", nil)
	if r.status != 403 || !strings.Contains(r.errorMessage(), "X-CSRF-Token") {
		t.Errorf("write without CSRF token: %d %s", r.status, r.body)
	}
	c.csrf = "wrong"
	if r := c.do("POST", "/api/labs/no-such-lab/sessions", nil); r.status != 403 {
		t.Errorf("write with a wrong CSRF token: %d", r.status)
	}
	c.csrf = token
	if r := c.do("POST", "/api/labs/no-such-lab/sessions", nil); r.status != 404 {
		t.Errorf("start an unknown lab: %d %s", r.status, r.body)
	}
	if r := c.do("GET", "/api/sessions/not-a-uuid", nil); r.status != 400 || !strings.Contains(r.errorMessage(), "not a session id") {
		t.Errorf("bad session id: %d %s", r.status, r.body)
	}
	if r := c.do("GET", "/api/sessions/6b0c2f55-1111-4f3e-9f43-000000000000", nil); r.status != 404 {
		t.Errorf("unknown session: %d %s", r.status, r.body)
	}
	if n := countRows(t, e, "lab_sessions") + countRows(t, e, "sandboxes"); n != 0 {
		t.Errorf("refused starts left %d rows", n)
	}

	// Sign-in: wrong password, then the rate limit.
	anon := newClient(t, e.url)
	if r := anon.do("POST", "/api/login", map[string]string{"email": "learner@example.com", "password": "wrong password"}); r.status != 401 || r.errorMessage() != "wrong email or password" {
		t.Errorf("wrong password: %d %s", r.status, r.body)
	}
	if r := anon.do("POST", "/api/login", map[string]string{"email": "nobody@example.com", "password": "wrong password"}); r.status != 401 || r.errorMessage() != "wrong email or password" {
		t.Errorf("unknown email answers differently: %d %s", r.status, r.body)
	}
	limited := false
	for i := 0; i < 15; i++ {
		if r := anon.do("POST", "/api/login", map[string]string{"email": "learner@example.com", "password": "wrong password"}); r.status == 429 {
			limited = true
			break
		}
	}
	if !limited {
		t.Error("15 wrong passwords in a row were never rate-limited")
	}
}

func TestAccountsAndPages(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), session.Manager(sandbox.NewManager()))
	c := newClient(t, e.url)
	c.signup("ada@example.com")
	var me struct {
		User struct{ Email, Role string }
	}
	c.do("GET", "/api/me", nil).json(t, &me)
	if me.User.Email != "ada@example.com" || me.User.Role != "learner" {
		t.Errorf("me: %+v", me)
	}
	// The session cookie is HttpOnly and SameSite.
	res, err := http.Post(e.url+"/api/login", "application/json", strings.NewReader(`{"email":"ada@example.com","password":"correct horse"}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	ck := res.Header.Get("Set-Cookie")
	if !strings.Contains(ck, "podpath_session=") || !strings.Contains(ck, "HttpOnly") || !strings.Contains(ck, "SameSite=Lax") {
		t.Errorf("session cookie %q", ck)
	}
	// A bearer token works for scripts, without CSRF.
	var login struct{ Token string }
	newClient(t, e.url).do("POST", "/api/login", map[string]string{"email": "ada@example.com", "password": "correct horse"}).json(t, &login)
	bearer := newClient(t, e.url)
	if r := bearer.do("GET", "/api/me", nil, "Authorization", "Bearer "+login.Token); r.status != 200 {
		t.Errorf("bearer token: %d %s", r.status, r.body)
	}
	if r := bearer.do("POST", "/api/logout", nil, "Authorization", "Bearer "+login.Token); r.status != 204 {
		t.Errorf("logout: %d", r.status)
	}
	if r := bearer.do("GET", "/api/me", nil, "Authorization", "Bearer "+login.Token); r.status != 401 {
		t.Errorf("token works after logout: %d", r.status)
	}

	// Pages render, in both languages.
	for _, p := range []string{"/", "/login", "/signup", "/?lang=zh"} {
		res, err := c.http.Get(e.url + p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(string(b), "podpath") {
			t.Errorf("page %s: %d", p, res.StatusCode)
		}
		if p == "/?lang=zh" && !strings.Contains(string(b), "实验") {
			t.Errorf("the Chinese page has no Chinese")
		}
	}
	// Form posts need the CSRF field.
	res, err = c.http.PostForm(e.url+"/labs/yaml-to-process/start", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("form post without CSRF: %d", res.StatusCode)
	}
	for _, p := range []string{"/healthz", "/readyz"} {
		if r := c.do("GET", p, nil); r.status != 200 {
			t.Errorf("%s: %d", p, r.status)
		}
	}
	// /metrics is for admins (TestMetricsAndReadyz).
}
