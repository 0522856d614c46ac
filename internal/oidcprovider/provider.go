// Package oidcprovider is a small but real OpenID provider for tests and
// local development: zitadel/oidc's certified op package over an
// in-memory storage, with one confidential client, a few users with
// groups, and a username-and-password login page. It serves discovery,
// JWKS, the authorization code flow with PKCE, token and userinfo, signing
// ID tokens with an RS256 key made at start.
//
// It lives under internal/ and only tests import it: it is not linked into
// the podpath binary.
package oidcprovider

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"html/template"
	"net"
	"net/http"
	"time"

	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/text/language"
)

// User is an account at the provider. Its subject is its Username.
type User struct {
	Username      string
	Password      string
	Email         string
	EmailVerified bool
	Name          string
	Groups        []string
}

// Options configure the provider.
type Options struct {
	Users        []User
	ClientID     string
	ClientSecret string
	// RedirectURIs are the client's registered redirect URIs (exact match).
	RedirectURIs []string
	// Addr is where to listen; empty is 127.0.0.1 on a random port.
	Addr string
}

// Provider is a running OpenID provider.
type Provider struct {
	issuer  string
	storage *storage
	srv     *http.Server
	ln      net.Listener
}

// GroupsScope asks for the groups claim (in the ID token and userinfo).
const GroupsScope = "groups"

// Start runs a provider until Close.
func Start(ctx context.Context, o Options) (*Provider, error) {
	if o.ClientID == "" || o.ClientSecret == "" || len(o.RedirectURIs) == 0 {
		return nil, errors.New("oidcprovider: set ClientID, ClientSecret and RedirectURIs")
	}
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("oidcprovider: listen on %s: %w", addr, err)
	}
	issuer := "http://" + ln.Addr().String()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		ln.Close()
		return nil, err
	}
	st := newStorage(o, key)
	var cryptoKey [32]byte
	if _, err := rand.Read(cryptoKey[:]); err != nil {
		ln.Close()
		return nil, err
	}
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:          cryptoKey,
		CodeMethodS256:     true,
		AuthMethodPost:     true,
		SupportedUILocales: []language.Tag{language.English},
		SupportedScopes:    []string{oidc.ScopeOpenID, oidc.ScopeProfile, oidc.ScopeEmail, GroupsScope},
		SupportedClaims:    []string{"sub", "aud", "exp", "iat", "iss", "nonce", "email", "email_verified", "name", "preferred_username", "groups"},
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure())
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("oidcprovider: %w", err)
	}
	callback := op.AuthCallbackURL(provider)
	interceptor := op.NewIssuerInterceptor(provider.IssuerFromRequest)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) {
		renderLogin(w, http.StatusOK, r.URL.Query().Get("authRequestID"), "")
	})
	mux.Handle("POST /login", interceptor.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.FormValue("id")
		if err := st.checkLogin(id, r.FormValue("username"), r.FormValue("password")); err != nil {
			renderLogin(w, http.StatusUnauthorized, id, err.Error())
			return
		}
		http.Redirect(w, r, callback(r.Context(), id), http.StatusFound)
	}))
	mux.Handle("/", provider)
	p := &Provider{issuer: issuer, storage: st, ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go p.srv.Serve(ln)
	return p, nil
}

// Issuer is the provider's issuer URL (http://127.0.0.1:port).
func (p *Provider) Issuer() string { return p.issuer }

// SetUser adds a user or replaces the one with the same username (to
// change someone's groups between sign-ins).
func (p *Provider) SetUser(u User) { p.storage.setUser(u) }

// Close stops the provider.
func (p *Provider) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}

var loginPage = template.Must(template.New("login").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test identity provider · sign in</title></head>
<body>
<h1>Test identity provider</h1>
{{if .Error}}<p id="error" role="alert">{{.Error}}</p>{{end}}
<form method="post" action="/login">
  <input type="hidden" name="id" value="{{.ID}}">
  <label>Username <input name="username" id="username" autocomplete="username" autofocus></label>
  <label>Password <input type="password" name="password" id="password" autocomplete="current-password"></label>
  <button type="submit" id="submit">Sign in</button>
</form>
</body></html>`))

func renderLogin(w http.ResponseWriter, status int, id, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = loginPage.Execute(w, map[string]string{"ID": id, "Error": msg})
}
