-- Webhooks: URLs an admin registered, with the secret deliveries are signed
-- with and the event types sent there; and the outbox, one delivery per
-- (event, subscribed webhook), written when the event happens and sent by
-- the dispatcher (webhooks/), which claims due rows with FOR UPDATE SKIP
-- LOCKED and a lease, so a restart loses none and two servers send none
-- twice.
CREATE TABLE webhooks (
    id          bigserial PRIMARY KEY,
    url         text NOT NULL,
    secret      text NOT NULL,
    events      text[] NOT NULL,
    created_by  bigint REFERENCES users ON DELETE SET NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    disabled_at timestamptz
);

CREATE TABLE webhook_deliveries (
    id               bigserial PRIMARY KEY,
    event_id         uuid NOT NULL,
    webhook_id       bigint NOT NULL REFERENCES webhooks ON DELETE CASCADE,
    event_type       text NOT NULL,
    -- The exact bytes signed and sent, the same on every attempt.
    body             text NOT NULL,
    status           text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz NOT NULL DEFAULT now(),
    last_status_code integer,
    last_error       text,
    delivered_at     timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    -- A dispatcher holding the row until locked_until; locked_by is its
    -- random id, so that a dispatcher whose lease ran out cannot record
    -- over the one that took the row after it.
    locked_until     timestamptz,
    locked_by        uuid,
    UNIQUE (event_id, webhook_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_webhook ON webhook_deliveries (webhook_id, id);

-- Events that happen once (a session's lab.completed, a workshop's
-- workshop.ended) record their key here in the same transaction as their
-- deliveries: a second emit of the same key writes nothing.
CREATE TABLE webhook_event_keys (
    key        text PRIMARY KEY,
    event_id   uuid NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

---- create above / drop below ----

DROP TABLE webhook_event_keys;
DROP TABLE webhook_deliveries;
DROP TABLE webhooks;
