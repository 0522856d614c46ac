-- Replicas (issue 19): several podpath serve processes on one database.
-- Each registers itself and beats every few seconds; one holds a lease
-- and does the work that must run once (the session engine's clusters,
-- the reaper, the warm pool, recovery, the workshop ticker).

-- A replica is live while its heartbeat is recent.
CREATE TABLE replicas (
    id           uuid PRIMARY KEY,
    host         text NOT NULL,
    version      text NOT NULL,
    started_at   timestamptz NOT NULL DEFAULT now(),
    heartbeat_at timestamptz NOT NULL DEFAULT now()
);

-- A lease is held by one replica until expires_at (the database's clock).
-- epoch counts the holders: it changes whenever another replica takes it.
CREATE TABLE leases (
    name       text PRIMARY KEY,
    holder     uuid NOT NULL,
    epoch      bigint NOT NULL,
    expires_at timestamptz NOT NULL
);

-- A take-over is typed through the replica that holds the instructor's
-- websocket; when that replica dies, the leader closes its records.
ALTER TABLE workshop_takeovers ADD COLUMN replica uuid;
