-- A lab may ask for bigger workers (lab.yaml cluster.worker; issue 20): the
-- Kubernetes backend sizes worker Pods by it and the capacity model counts
-- it, so a restarted server must know it for every cluster it finds,
-- warm-pool ones included. 0: the backend's default.
ALTER TABLE sandboxes
    ADD COLUMN worker_milli_cpu bigint NOT NULL DEFAULT 0,
    ADD COLUMN worker_memory_mib bigint NOT NULL DEFAULT 0;

---- create above / drop below ----

ALTER TABLE sandboxes DROP COLUMN worker_milli_cpu, DROP COLUMN worker_memory_mib;
