package oidcprovider_test

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/podpath/podpath/internal/oidcprovider"
)

// TestCodeFlow walks the authorization code flow with PKCE against the
// provider with go-oidc, the way podpath's server does, and checks the ID
// token's claims, the nonce, and that a code works once.
func TestCodeFlow(t *testing.T) {
	ctx := context.Background()
	const redirect = "http://127.0.0.1:9/cb"
	p, err := oidcprovider.Start(ctx, oidcprovider.Options{
		ClientID: "podpath", ClientSecret: "s3cret", RedirectURIs: []string{redirect},
		Users: []oidcprovider.User{{Username: "ada", Password: "pw", Email: "ada@example.com", EmailVerified: true, Name: "Ada L", Groups: []string{"platform", "sre"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	op, err := oidc.NewProvider(ctx, p.Issuer())
	if err != nil {
		t.Fatal(err)
	}
	conf := oauth2.Config{ClientID: "podpath", ClientSecret: "s3cret", Endpoint: op.Endpoint(), RedirectURL: redirect,
		Scopes: []string{oidc.ScopeOpenID, "email", "profile", "groups"}}
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL("st", oidc.Nonce("n0"), oauth2.S256ChallengeOption(verifier))

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := noFollow.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	login, err := res.Location()
	if err != nil {
		t.Fatalf("authorize answered %d without a redirect to the login page", res.StatusCode)
	}
	id := login.Query().Get("authRequestID")
	res, err = noFollow.PostForm(p.Issuer()+"/login", url.Values{"id": {id}, "username": {"ada"}, "password": {"wrong"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong password answered %d", res.StatusCode)
	}
	res, err = noFollow.PostForm(p.Issuer()+"/login", url.Values{"id": {id}, "username": {"ada"}, "password": {"pw"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	cb, _ := res.Location()
	res, err = noFollow.Get(cb.String())
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	back, err := res.Location()
	if err != nil {
		t.Fatalf("the callback answered %d without a redirect to the client", res.StatusCode)
	}
	if back.Query().Get("state") != "st" {
		t.Fatalf("came back with %s", back)
	}
	code := back.Query().Get("code")
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption("a-wrong-verifier-a-wrong-verifier-a-wrong-verifier")); err == nil {
		t.Fatal("a wrong PKCE verifier was accepted")
	}
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := tok.Extra("id_token").(string)
	idt, err := op.Verifier(&oidc.Config{ClientID: "podpath"}).Verify(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Email    string   `json:"email"`
		Verified bool     `json:"email_verified"`
		Name     string   `json:"name"`
		Groups   []string `json:"groups"`
	}
	if err := idt.Claims(&claims); err != nil {
		t.Fatal(err)
	}
	if idt.Subject != "ada" || idt.Nonce != "n0" || claims.Email != "ada@example.com" || !claims.Verified || claims.Name != "Ada L" || !slices.Equal(claims.Groups, []string{"platform", "sre"}) {
		t.Errorf("ID token: sub %q nonce %q claims %+v", idt.Subject, idt.Nonce, claims)
	}
	if _, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier)); err == nil {
		t.Error("the same code was exchanged twice")
	}
	info, err := op.UserInfo(ctx, oauth2.StaticTokenSource(tok))
	if err != nil || info.Email != "ada@example.com" {
		t.Errorf("userinfo: %+v, %v", info, err)
	}
}
