-- The sign-in and join-code limits (issue 19), shared by every replica:
-- token buckets kept here instead of in each process's memory, so N
-- replicas behind a balancer give a guesser one budget, not N.
-- A bucket holds tokens as of at, refills at per_minute up to burst; a
-- row is made only for a request that was let through (or a wrong join
-- code), and dropped once it would be full again: forgetting it then
-- forgives nothing.
CREATE TABLE rate_buckets (
    key        text PRIMARY KEY,
    tokens     double precision NOT NULL,
    at         timestamptz NOT NULL,
    per_minute double precision NOT NULL,
    burst      integer NOT NULL
);

---- create above / drop below ----

DROP TABLE rate_buckets;
