-- Single sign-on with OpenID Connect (docs/TEAMS.md, "Single sign-on").

-- An account's identities at OpenID providers: the provider's issuer URL
-- and its stable subject for the person. A person signs in by this pair;
-- the e-mail is only used to link the first sign-in to an existing account.
CREATE TABLE user_identities (
    issuer        text NOT NULL,
    subject       text NOT NULL,
    user_id       bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    email         text NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_login_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX user_identities_user ON user_identities (user_id);

-- Sign-ins under way: the state sent to the provider (hashed), the browser
-- that started it (hash of a cookie), the nonce and the PKCE verifier.
-- A row is deleted when its callback arrives, so a state works once.
CREATE TABLE oidc_logins (
    state_hash   bytea PRIMARY KEY,
    browser_hash bytea NOT NULL,
    nonce        text NOT NULL,
    verifier     text NOT NULL,
    next         text NOT NULL,
    expires_at   timestamptz NOT NULL
);
CREATE INDEX oidc_logins_expires ON oidc_logins (expires_at);
