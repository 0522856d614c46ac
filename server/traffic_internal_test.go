package server

import (
	"net/http"
	"net/http/httputil"
	"testing"
)

// The pieces of traffic.go an attacker aims at: where the entry may send
// the browser, which host names are an app's, which cookies reach the
// app, and when the domains are too close.
func TestTrafficEdges(t *testing.T) {
	for to, want := range map[string]string{
		"/app?x=1": "/app?x=1", "/": "/", "": "/", "app": "/", "//evil.example": "/", "/\\evil.example": "/",
		"/\t/evil.example": "/", "/%09/evil.example": "/%09/evil.example", "https://evil.example/": "/", "/a\nb": "/",
	} {
		if got := localPath(to); got != want {
			t.Errorf("localPath(%q) = %q, want %q", to, got, want)
		}
	}

	s := &Server{cfg: Config{PublicURL: "http://127.0.0.1:8080"}}
	const id = "0b7e43d8-8f51-4a6b-9b55-5b2a7c3d1e0f"
	for host, ok := range map[string]bool{
		id + "-30080.localhost:8080":                                true,
		"0B7E43D8-8F51-4A6B-9B55-5B2A7C3D1E0F-30080.localhost:8080": true, // host names are case-blind
		"0b7e43d88f514a6b9b555b2a7c3d1e0f-30080.localhost:8080":     false,
		id + "-030080.localhost:8080":                               false,
		id + "-+30080.localhost:8080":                               false,
		id + "-70000.localhost:8080":                                false,
		id + "-30080.evil.localhost:8080":                           false,
		id + "-30080.localhost.evil.example:8080":                   false,
		"localhost:8080":                                            false,
	} {
		if _, _, got := s.trafficHost(host); got != ok {
			t.Errorf("trafficHost(%q) = %v, want %v", host, got, ok)
		}
	}

	r, _ := http.NewRequest("GET", "http://x/", nil)
	r.Header.Add("Cookie", `podpath_traffic=abc; e={"k":1}; b=c"d`)
	r.Header.Add("Cookie", "__Host-podpath_traffic=def; keep=1")
	dropCookies(r, trafficCookie, trafficCookieSecure)
	if got := r.Header.Get("Cookie"); got != `e={"k":1}; b=c"d; keep=1` || len(r.Header.Values("Cookie")) != 1 {
		t.Errorf("the app's cookies: %q", r.Header.Values("Cookie"))
	}

	// Behind a proxy that ends TLS, the app is told https, the scheme the
	// browser used; podpath's own cookie never reaches it.
	for public, want := range map[string]string{"https://podpath.example.org": "https", "http://127.0.0.1:8080": "http"} {
		s := &Server{cfg: Config{PublicURL: public, TrafficDomain: "labs.example.com"}}
		in, _ := http.NewRequest("GET", "http://"+id+"-30080.labs.example.com/x", nil)
		in.Header.Set("Cookie", "__Host-podpath_traffic=abc; app=1")
		pr := &httputil.ProxyRequest{In: in, Out: in.Clone(in.Context())}
		s.rewriteTraffic(pr, "ls-a-b", 30080)
		if got := pr.Out.Header.Get("X-Forwarded-Proto"); got != want {
			t.Errorf("behind %s the app is told %q, want %q", public, got, want)
		}
		if pr.Out.URL.Host != "ls-a-b:30080" || pr.Out.Host != id+"-30080.labs.example.com" || pr.Out.Header.Get("Cookie") != "app=1" {
			t.Errorf("the app's request: %s, Host %s, Cookie %q", pr.Out.URL, pr.Out.Host, pr.Out.Header.Get("Cookie"))
		}
	}

	for pair, want := range map[[2]string]string{
		{"labs.example.com", "https://podpath.example.com"}:    "example.com",
		{"labs.example.net", "https://podpath.example.com"}:    "",
		{"labs.example.co.uk:8443", "https://x.example.co.uk"}: "example.co.uk",
		{"off", "https://podpath.example.com"}:                 "",
	} {
		if got := trafficSharesDomain(Config{TrafficDomain: pair[0], PublicURL: pair[1]}); got != want {
			t.Errorf("trafficSharesDomain(%v) = %q, want %q", pair, got, want)
		}
	}
}
