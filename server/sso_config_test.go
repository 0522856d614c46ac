package server_test

import (
	"strings"
	"testing"

	"github.com/podpath/podpath/server"
)

// TestSSOConfig checks that every wrong single sign-on setting is refused
// with a message naming what to set.
func TestSSOConfig(t *testing.T) {
	good := func() server.Config {
		c := server.DefaultConfig()
		c.PublicURL = "https://podpath.example.com"
		c.OIDCIssuer, c.OIDCClientID, c.OIDCClientSecret = "https://login.example.com", "podpath", "secret"
		return c
	}
	for _, tc := range []struct {
		name   string
		mutate func(*server.Config)
		want   string
	}{
		{"ok", func(*server.Config) {}, ""},
		{"loopback http", func(c *server.Config) { c.OIDCIssuer = "http://127.0.0.1:5556" }, ""},
		{"no client id", func(c *server.Config) { c.OIDCClientID = "" }, "PODPATH_OIDC_CLIENT_ID"},
		{"no secret", func(c *server.Config) { c.OIDCClientSecret = "" }, "PODPATH_OIDC_CLIENT_SECRET"},
		{"http issuer", func(c *server.Config) { c.OIDCIssuer = "http://login.example.com" }, "must use https"},
		{"not a URL", func(c *server.Config) { c.OIDCIssuer = "login.example.com" }, "is not an issuer URL"},
		{"no public URL", func(c *server.Config) { c.PublicURL = "" }, "PODPATH_PUBLIC_URL"},
		{"client without issuer", func(c *server.Config) { c.OIDCIssuer = "" }, "PODPATH_OIDC_ISSUER is not"},
		{"passwords off without SSO", func(c *server.Config) { *c = server.DefaultConfig(); c.PasswordLogin = false }, "nobody could sign in"},
		{"sign-up without passwords", func(c *server.Config) { c.PasswordLogin, c.AllowSignup = false, true }, "PODPATH_ALLOW_SIGNUP"},
		{"bad domain", func(c *server.Config) { c.OIDCAllowedDomains = []string{"ada@example.com"} }, "PODPATH_OIDC_ALLOWED_DOMAINS"},
		{"empty groups claim", func(c *server.Config) { c.OIDCGroupsClaim = " " }, "PODPATH_OIDC_GROUPS_CLAIM"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.mutate(&c)
			err := c.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
	c := good()
	c.OIDCAllowedDomains = []string{" @Example.COM ", "", "corp.example.org"}
	if err := c.Validate(); err != nil || strings.Join(c.OIDCAllowedDomains, ",") != "example.com,corp.example.org" {
		t.Errorf("domains normalised to %q, %v", c.OIDCAllowedDomains, err)
	}
	if c.OIDCRedirectURL() != "https://podpath.example.com/auth/oidc/callback" {
		t.Errorf("redirect URL %s", c.OIDCRedirectURL())
	}
}

// A sign-in switch is read strictly: "off" is not taken for true, and a
// value that is not a boolean stops the server with its name.
func TestPasswordLoginEnv(t *testing.T) {
	t.Setenv("PODPATH_PASSWORD_LOGIN", "off")
	c := server.DefaultConfig()
	if c.PasswordLogin || c.Validate() == nil {
		t.Fatalf("PODPATH_PASSWORD_LOGIN=off: password login %v, validate %v; want off, and no SSO refused", c.PasswordLogin, c.Validate())
	}
	t.Setenv("PODPATH_PASSWORD_LOGIN", "nope")
	c = server.DefaultConfig()
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), `PODPATH_PASSWORD_LOGIN="nope" is not true or false`) {
		t.Fatalf("PODPATH_PASSWORD_LOGIN=nope: %v", err)
	}
}
