package oidcprovider

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"errors"
	"slices"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

func newID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

// storage is op.Storage in memory.
type storage struct {
	mu       sync.Mutex
	client   *client
	users    map[string]User
	requests map[string]*authRequest
	codes    map[string]string // code → request id
	tokens   map[string]token  // access token id → token
	key      *rsa.PrivateKey
	keyID    string
}

type token struct {
	subject  string
	clientID string
	scopes   []string
	expires  time.Time
}

func newStorage(o Options, key *rsa.PrivateKey) *storage {
	s := &storage{
		client:   &client{id: o.ClientID, secret: o.ClientSecret, redirectURIs: o.RedirectURIs},
		users:    map[string]User{},
		requests: map[string]*authRequest{},
		codes:    map[string]string{},
		tokens:   map[string]token{},
		key:      key,
		keyID:    newID()[:12],
	}
	for _, u := range o.Users {
		s.users[u.Username] = u
	}
	return s
}

func (s *storage) setUser(u User) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.users[u.Username] = u
}

var errUnsupported = errors.New("not supported by this test provider")

func (s *storage) checkLogin(id, username, password string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req, ok := s.requests[id]
	if !ok {
		return errors.New("this sign-in request is unknown or over; start again from the application")
	}
	u, ok := s.users[username]
	if !ok || u.Password != password {
		return errors.New("wrong username or password")
	}
	req.subject, req.done, req.authTime = u.Username, true, time.Now()
	return nil
}

// authRequest is op.AuthRequest.
type authRequest struct {
	id       string
	req      oidc.AuthRequest
	subject  string
	done     bool
	authTime time.Time
}

func (a *authRequest) GetID() string                      { return a.id }
func (a *authRequest) GetACR() string                     { return "" }
func (a *authRequest) GetAMR() []string                   { return []string{"pwd"} }
func (a *authRequest) GetAudience() []string              { return []string{a.req.ClientID} }
func (a *authRequest) GetAuthTime() time.Time             { return a.authTime }
func (a *authRequest) GetClientID() string                { return a.req.ClientID }
func (a *authRequest) GetNonce() string                   { return a.req.Nonce }
func (a *authRequest) GetRedirectURI() string             { return a.req.RedirectURI }
func (a *authRequest) GetResponseType() oidc.ResponseType { return a.req.ResponseType }
func (a *authRequest) GetResponseMode() oidc.ResponseMode { return a.req.ResponseMode }
func (a *authRequest) GetScopes() []string                { return a.req.Scopes }
func (a *authRequest) GetState() string                   { return a.req.State }
func (a *authRequest) GetSubject() string                 { return a.subject }
func (a *authRequest) Done() bool                         { return a.done }
func (a *authRequest) GetCodeChallenge() *oidc.CodeChallenge {
	if a.req.CodeChallenge == "" {
		return nil
	}
	return &oidc.CodeChallenge{Challenge: a.req.CodeChallenge, Method: a.req.CodeChallengeMethod}
}

func (s *storage) CreateAuthRequest(_ context.Context, req *oidc.AuthRequest, _ string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := &authRequest{id: newID(), req: *req}
	s.requests[a.id] = a
	return a, nil
}

func (s *storage) AuthRequestByID(_ context.Context, id string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.requests[id]; ok {
		return a, nil
	}
	return nil, errors.New("auth request not found")
}

func (s *storage) AuthRequestByCode(_ context.Context, code string) (op.AuthRequest, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a, ok := s.requests[s.codes[code]]; ok {
		return a, nil
	}
	return nil, errors.New("code not found or used already")
}

func (s *storage) SaveAuthCode(_ context.Context, id, code string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.codes[code] = id
	return nil
}

// DeleteAuthRequest runs when a code is exchanged: the code is gone with
// its request, so a second exchange of the same code fails.
func (s *storage) DeleteAuthRequest(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.requests, id)
	for code, rid := range s.codes {
		if rid == id {
			delete(s.codes, code)
		}
	}
	return nil
}

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, exp := newID(), time.Now().Add(5*time.Minute)
	clientID := ""
	if a, ok := req.(*authRequest); ok {
		clientID = a.GetClientID()
	}
	s.tokens[id] = token{subject: req.GetSubject(), clientID: clientID, scopes: req.GetScopes(), expires: exp}
	return id, exp, nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errUnsupported
}

func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}

func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, tokenID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tokens, tokenID)
	return nil
}

func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

type signingKey struct {
	id  string
	key *rsa.PrivateKey
}

func (k signingKey) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k signingKey) Key() any                                    { return k.key }
func (k signingKey) ID() string                                  { return k.id }

type publicKey struct{ signingKey }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.PublicKey }

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) {
	return signingKey{s.keyID, s.key}, nil
}

func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}

func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	return []op.Key{publicKey{signingKey{s.keyID, s.key}}}, nil
}

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	if id != s.client.id {
		return nil, errors.New("unknown client " + id)
	}
	return s.client, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	if id != s.client.id || secret != s.client.secret {
		return errors.New("wrong client id or secret")
	}
	return nil
}

func (s *storage) setUserinfo(userinfo *oidc.UserInfo, subject string, scopes []string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[subject]
	if !ok {
		return errors.New("user not found")
	}
	for _, scope := range scopes {
		switch scope {
		case oidc.ScopeOpenID:
			userinfo.Subject = u.Username
		case oidc.ScopeEmail:
			userinfo.Email = u.Email
			userinfo.EmailVerified = oidc.Bool(u.EmailVerified)
		case oidc.ScopeProfile:
			userinfo.Name = u.Name
			userinfo.PreferredUsername = u.Username
		case GroupsScope:
			userinfo.AppendClaims("groups", slices.Clone(u.Groups))
		}
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(_ context.Context, userinfo *oidc.UserInfo, userID, _ string, scopes []string) error {
	return s.setUserinfo(userinfo, userID, scopes)
}

func (s *storage) SetUserinfoFromRequest(_ context.Context, userinfo *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	return s.setUserinfo(userinfo, req.GetSubject(), scopes)
}

func (s *storage) SetUserinfoFromToken(_ context.Context, userinfo *oidc.UserInfo, tokenID, subject, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expires) || t.subject != subject {
		return errors.New("token is not valid")
	}
	return s.setUserinfo(userinfo, subject, t.scopes)
}

func (s *storage) SetIntrospectionFromToken(_ context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || time.Now().After(t.expires) || t.subject != subject {
		return errors.New("token is not valid")
	}
	resp.Active, resp.Subject, resp.ClientID, resp.Scope = true, subject, t.clientID, t.scopes
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(context.Context, string, string, []string) (map[string]any, error) {
	return nil, nil
}

func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errUnsupported
}

func (s *storage) ValidateJWTProfileScopes(context.Context, string, []string) ([]string, error) {
	return nil, errUnsupported
}

func (s *storage) Health(context.Context) error { return nil }

// client is the one confidential web client.
type client struct {
	id, secret   string
	redirectURIs []string
}

func (c *client) GetID() string                       { return c.id }
func (c *client) RedirectURIs() []string              { return c.redirectURIs }
func (c *client) PostLogoutRedirectURIs() []string    { return nil }
func (c *client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c *client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }
func (c *client) ResponseTypes() []oidc.ResponseType {
	return []oidc.ResponseType{oidc.ResponseTypeCode}
}
func (c *client) GrantTypes() []oidc.GrantType        { return []oidc.GrantType{oidc.GrantTypeCode} }
func (c *client) LoginURL(id string) string           { return "/login?authRequestID=" + id }
func (c *client) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeBearer }
func (c *client) IDTokenLifetime() time.Duration      { return 5 * time.Minute }

// DevMode allows the http redirect URIs of a test server.
func (c *client) DevMode() bool { return true }
func (c *client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c *client) IsScopeAllowed(scope string) bool { return scope == GroupsScope }

// IDTokenUserinfoClaimsAssertion puts e-mail, name and groups in the ID
// token itself, as most providers do.
func (c *client) IDTokenUserinfoClaimsAssertion() bool { return true }
func (c *client) ClockSkew() time.Duration             { return 0 }
