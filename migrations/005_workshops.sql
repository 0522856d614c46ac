-- Workshops: an instructor's class with a join code, seats, labs in order,
-- a time window and clusters prepared ahead; learners who joined (guests
-- are accounts bound to one workshop); take-over audit records. The table
-- from 001 was a placeholder nothing wrote; it gains what a class needs.
ALTER TABLE workshops RENAME COLUMN name TO title;
ALTER TABLE workshops ALTER COLUMN starts_at SET NOT NULL;
ALTER TABLE workshops ALTER COLUMN ends_at SET NOT NULL;
ALTER TABLE workshops ADD COLUMN seats integer NOT NULL DEFAULT 1 CHECK (seats > 0);
ALTER TABLE workshops ADD COLUMN guests boolean NOT NULL DEFAULT false;
ALTER TABLE workshops ADD COLUMN prepare integer NOT NULL DEFAULT 0 CHECK (prepare >= 0);
ALTER TABLE workshops ADD COLUMN prepare_lead_seconds integer NOT NULL DEFAULT 1800 CHECK (prepare_lead_seconds >= 0);
ALTER TABLE workshops ADD COLUMN ended_at timestamptz;
ALTER TABLE workshops ADD COLUMN broadcast text;
ALTER TABLE workshops ADD COLUMN broadcast_at timestamptz;
ALTER TABLE workshops ADD CONSTRAINT workshops_window CHECK (ends_at > starts_at);

-- A guest is an account that cannot sign in with a password, bound to the
-- workshop it joined.
ALTER TABLE users ADD COLUMN guest_workshop_id bigint REFERENCES workshops ON DELETE SET NULL;

CREATE TABLE workshop_learners (
    workshop_id bigint NOT NULL REFERENCES workshops ON DELETE CASCADE,
    user_id     bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    name        text NOT NULL,
    joined_at   timestamptz NOT NULL DEFAULT now(),
    hand_at     timestamptz,
    PRIMARY KEY (workshop_id, user_id)
);
CREATE INDEX workshop_learners_user ON workshop_learners (user_id);
CREATE INDEX lab_sessions_workshop ON lab_sessions (workshop_id) WHERE workshop_id IS NOT NULL;

-- A pool cluster prepared for one workshop is claimed by its learners only.
ALTER TABLE sandboxes ADD COLUMN pool_workshop_id bigint REFERENCES workshops ON DELETE SET NULL;

CREATE TABLE workshop_takeovers (
    id             bigserial PRIMARY KEY,
    workshop_id    bigint NOT NULL REFERENCES workshops ON DELETE CASCADE,
    instructor_id  bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    learner_id     bigint NOT NULL REFERENCES users ON DELETE CASCADE,
    lab_session_id uuid REFERENCES lab_sessions ON DELETE SET NULL,
    node           text NOT NULL,
    started_at     timestamptz NOT NULL DEFAULT now(),
    ended_at       timestamptz,
    ended_by       text
);
CREATE INDEX workshop_takeovers_workshop ON workshop_takeovers (workshop_id, id);

---- create above / drop below ----

DROP TABLE workshop_takeovers;
ALTER TABLE sandboxes DROP COLUMN pool_workshop_id;
DROP INDEX lab_sessions_workshop;
DROP TABLE workshop_learners;
ALTER TABLE users DROP COLUMN guest_workshop_id;
ALTER TABLE workshops DROP CONSTRAINT workshops_window;
ALTER TABLE workshops DROP COLUMN broadcast_at;
ALTER TABLE workshops DROP COLUMN broadcast;
ALTER TABLE workshops DROP COLUMN ended_at;
ALTER TABLE workshops DROP COLUMN prepare_lead_seconds;
ALTER TABLE workshops DROP COLUMN prepare;
ALTER TABLE workshops DROP COLUMN guests;
ALTER TABLE workshops DROP COLUMN seats;
ALTER TABLE workshops ALTER COLUMN ends_at DROP NOT NULL;
ALTER TABLE workshops ALTER COLUMN starts_at DROP NOT NULL;
ALTER TABLE workshops RENAME COLUMN title TO name;
