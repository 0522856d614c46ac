-- Teams: an admin's group of engineers with leads; members join by invite
-- link or through a single sign-on group; leads assign tracks and labs
-- with due dates.
CREATE TABLE teams (
    id         bigserial PRIMARY KEY,
    name       text NOT NULL,
    -- the value of the identity provider's group claim that makes a user
    -- a member at sign-in (see docs/TEAMS.md)
    sso_group  text,
    created_by bigint REFERENCES users ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX teams_name_key ON teams (lower(name));
CREATE UNIQUE INDEX teams_sso_group_key ON teams (sso_group) WHERE sso_group IS NOT NULL;

CREATE TABLE team_members (
    team_id   bigint NOT NULL REFERENCES teams ON DELETE CASCADE,
    user_id   bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    role      text NOT NULL DEFAULT 'member' CHECK (role IN ('member', 'lead')),
    -- how they came: admin, invite, sso
    via       text NOT NULL CHECK (via IN ('admin', 'invite', 'sso')),
    joined_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user ON team_members (user_id);
-- Reports and progress read a user's lab sessions.
CREATE INDEX lab_sessions_user ON lab_sessions (user_id, created_at);

-- An invite link's token is shown once; only its hash is kept.
CREATE TABLE team_invites (
    id             bigserial PRIMARY KEY,
    team_id        bigint NOT NULL REFERENCES teams ON DELETE CASCADE,
    token_hash     bytea NOT NULL UNIQUE,
    expires_at     timestamptz NOT NULL,
    max_uses       integer NOT NULL CHECK (max_uses > 0),
    uses           integer NOT NULL DEFAULT 0 CHECK (uses >= 0),
    allowed_domain text,
    created_by     bigint REFERENCES users ON DELETE SET NULL,
    created_at     timestamptz NOT NULL DEFAULT now(),
    revoked_at     timestamptz
);

CREATE TABLE team_assignments (
    id          bigserial PRIMARY KEY,
    team_id     bigint NOT NULL REFERENCES teams ON DELETE CASCADE,
    kind        text NOT NULL CHECK (kind IN ('track', 'lab')),
    ref         text NOT NULL,
    due_at      timestamptz NOT NULL,
    assigned_by bigint REFERENCES users ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (team_id, kind, ref)
);
