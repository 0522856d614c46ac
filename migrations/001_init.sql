-- podpath's first schema: accounts, web sessions, lab sessions and their
-- sandboxes, check attempts with per-check results, step progress, and
-- room for workshops.

-- One row: this installation's id. Sandbox names carry it, so two podpath
-- servers on one Docker engine never take each other's clusters for orphans.
CREATE TABLE instance (
    id text PRIMARY KEY
);
INSERT INTO instance (id) VALUES (substr(md5(random()::text || clock_timestamp()::text), 1, 6));

CREATE TABLE users (
    id            bigserial PRIMARY KEY,
    email         text NOT NULL,
    name          text NOT NULL,
    password_hash text NOT NULL,
    role          text NOT NULL DEFAULT 'learner' CHECK (role IN ('learner', 'instructor', 'admin')),
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_login_at timestamptz
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email));

CREATE TABLE web_sessions (
    token_hash   bytea PRIMARY KEY,
    user_id      bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    csrf_token   text NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL
);
CREATE INDEX web_sessions_user ON web_sessions (user_id);

-- A workshop groups learners under an instructor around a set of labs.
CREATE TABLE workshops (
    id            bigserial PRIMARY KEY,
    name          text NOT NULL,
    code          text NOT NULL UNIQUE,
    instructor_id bigint NOT NULL REFERENCES users,
    lab_ids       text[] NOT NULL DEFAULT '{}',
    starts_at     timestamptz,
    ends_at       timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE lab_sessions (
    id                   uuid PRIMARY KEY,
    user_id              bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    lab_id               text NOT NULL,
    workshop_id          bigint REFERENCES workshops,
    state                text NOT NULL CHECK (state IN ('active', 'ended')),
    created_at           timestamptz NOT NULL DEFAULT now(),
    last_activity_at     timestamptz NOT NULL DEFAULT now(),
    -- the hard lifetime; "extend" moves it
    expires_at           timestamptz NOT NULL,
    idle_timeout_seconds integer NOT NULL CHECK (idle_timeout_seconds > 0),
    extensions           integer NOT NULL DEFAULT 0,
    ended_at             timestamptz,
    end_reason           text
);
-- One active lab session per learner.
CREATE UNIQUE INDEX lab_sessions_one_active ON lab_sessions (user_id) WHERE state = 'active';
CREATE INDEX lab_sessions_active ON lab_sessions (state) WHERE state = 'active';

CREATE TABLE sandboxes (
    name           text PRIMARY KEY,
    lab_session_id uuid NOT NULL UNIQUE REFERENCES lab_sessions ON DELETE CASCADE,
    state          text NOT NULL CHECK (state IN ('requested', 'provisioning', 'ready', 'hibernated', 'expiring', 'deleted', 'failed')),
    image          text NOT NULL,
    workers        integer NOT NULL CHECK (workers >= 0),
    nodes          jsonb NOT NULL DEFAULT '[]',
    -- provisioning progress events, in order
    progress       jsonb NOT NULL DEFAULT '[]',
    error          text,
    created_at     timestamptz NOT NULL DEFAULT now(),
    ready_at       timestamptz,
    deleted_at     timestamptz,
    updated_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandboxes_state ON sandboxes (state);

CREATE TABLE check_attempts (
    id             bigserial PRIMARY KEY,
    lab_session_id uuid NOT NULL REFERENCES lab_sessions ON DELETE CASCADE,
    step_id        text NOT NULL,
    -- check: the learner pressed Check; skip: the step's solve ran
    kind           text NOT NULL CHECK (kind IN ('check', 'skip')),
    passed         boolean NOT NULL,
    answer         text,
    error          text,
    duration_ms    integer NOT NULL,
    created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX check_attempts_step ON check_attempts (lab_session_id, step_id, id);

CREATE TABLE check_results (
    attempt_id  bigint NOT NULL REFERENCES check_attempts ON DELETE CASCADE,
    idx         integer NOT NULL,
    name        jsonb NOT NULL,
    passed      boolean NOT NULL,
    observed    text NOT NULL,
    feedback    jsonb,
    probe_error boolean NOT NULL DEFAULT false,
    duration_ms integer NOT NULL,
    PRIMARY KEY (attempt_id, idx)
);

-- A step's status is derived from its last attempt; kept here so pages
-- read it without scanning attempts.
CREATE TABLE step_progress (
    lab_session_id  uuid NOT NULL REFERENCES lab_sessions ON DELETE CASCADE,
    step_id         text NOT NULL,
    status          text NOT NULL CHECK (status IN ('passed', 'failed', 'skipped')),
    attempts        integer NOT NULL,
    last_attempt_id bigint NOT NULL REFERENCES check_attempts ON DELETE CASCADE,
    updated_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (lab_session_id, step_id)
);

---- create above / drop below ----

DROP TABLE step_progress;
DROP TABLE check_results;
DROP TABLE check_attempts;
DROP TABLE sandboxes;
DROP TABLE lab_sessions;
DROP TABLE workshops;
DROP TABLE web_sessions;
DROP TABLE users;
DROP TABLE instance;
