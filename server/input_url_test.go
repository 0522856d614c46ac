package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/testenv"
)

// Text Postgres would refuse in a link (a NUL, bytes that are not UTF-8)
// is a 400 that says what to correct, on pages and in the API, before any
// handler reads it: GET /join/%00AB answered 500.
func TestBadTextInLinks(t *testing.T) {
	e := startServer(t, testConfig(testenv.Postgres(t)), fakesandbox.New())
	c := newClient(t, e.url)
	c.signup("links@example.com")
	for _, path := range []string{
		"/join/%00AB", "/join/AB%FF", "/join?code=%00AB", "/?lang=%00",
		"/api/labs/%00lab", "/api/sessions/%00/steps/x", "/api/tracks?x%00=1",
	} {
		res, err := c.http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "without NUL characters") {
			t.Errorf("GET %s: %d %.300s; want 400 saying what to correct", path, res.StatusCode, body)
		}
	}
	// A post of a join code with a NUL in the path, too.
	if r := c.do("POST", "/join/%00AB", nil); r.status != http.StatusBadRequest {
		t.Errorf("POST /join/%%00AB: %d %.200s", r.status, r.body)
	}
}
