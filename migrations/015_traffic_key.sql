-- Traffic ports (docs/LABS.md "Web apps in the cluster"): the key that
-- signs the tokens and cookies of a session's app hosts. The first replica
-- that needs it stores one (store.TrafficKey); every replica signs with it.
ALTER TABLE instance ADD COLUMN traffic_key bytea;

---- create above / drop below ----

ALTER TABLE instance DROP COLUMN traffic_key;
