package server_test

import (
	"context"
	"github.com/podpath/podpath/accounts"
	"testing"
	"time"

	"github.com/podpath/podpath/internal/browser"
	"github.com/podpath/podpath/internal/fakesandbox"
	"github.com/podpath/podpath/internal/oidcprovider"
	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

// Linking a first single sign-on to an account by its e-mail drops the
// password of an account someone made by signing up, even when sign-up
// was open only back then (it dropped it only while sign-up was open at
// link time); an account an admin made keeps its password.
func TestSSOLinkDropsASignedUpPassword(t *testing.T) {
	if _, err := browser.Path(); err != nil {
		testenv.Missing(t, "Chromium (apt-get install -y chromium)")
	}
	dbURL := testenv.Postgres(t)
	addr := freeAddr(t)
	cfg := testConfig(dbURL)
	cfg.Listen, cfg.PublicURL = addr, "http://"+addr

	// Sign-up open, no single sign-on yet: Mia signs up; an admin makes Max.
	open := startServer(t, cfg, fakesandbox.New())
	if r := newClient(t, open.url).do("POST", "/api/signup", map[string]string{"email": "mia@example.com", "password": "mia's password", "name": "Mia"}); r.status != 201 {
		t.Fatalf("Mia signs up: %d %s", r.status, r.body)
	}
	maxHash, err := accounts.HashPassword("max's password")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.store.CreateUser(context.Background(), "max@example.com", "Max", maxHash, store.RoleLearner); err != nil {
		t.Fatal(err)
	}
	open.stop()

	// Later: sign-up closed, single sign-on on.
	cfg.AllowSignup = false
	cfg.OIDCClientID, cfg.OIDCClientSecret = "podpath", "client-secret"
	idp, err := oidcprovider.Start(context.Background(), oidcprovider.Options{
		Users: []oidcprovider.User{
			{Username: "mia", Password: "mia-pw", Email: "mia@example.com", EmailVerified: true, Name: "Mia"},
			{Username: "max", Password: "max-pw", Email: "max@example.com", EmailVerified: true, Name: "Max"},
		},
		ClientID: "podpath", ClientSecret: "client-secret", RedirectURIs: []string{cfg.OIDCRedirectURL()},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(idp.Close)
	cfg.OIDCIssuer = idp.Issuer()
	e := startServer(t, cfg, fakesandbox.New())
	ctx, cancel, err := browser.New(context.Background(), 1200, 800)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 2*time.Minute)
	defer stop()
	for _, who := range []struct{ user, email, password string }{
		{"mia", "mia@example.com", "mia's password"},
		{"max", "max@example.com", "max's password"},
	} {
		signOutBrowser(ctx, t)
		ssoSignIn(ctx, t, e, who.user, who.user+"-pw")
		poll(ctx, t, who.user+"'s home page", `location.pathname === "/" && document.querySelector(".who") !== null`, 20*time.Second)
		r := newClient(t, e.url).do("POST", "/api/login", map[string]string{"email": who.email, "password": who.password})
		switch who.user {
		case "mia":
			if r.status != 401 {
				t.Errorf("Mia signed up; after single sign-on linked her account her old password answers %d", r.status)
			}
		case "max":
			if r.status != 200 {
				t.Errorf("an admin made Max's account; after linking his password answers %d %s", r.status, r.body)
			}
		}
	}
}
