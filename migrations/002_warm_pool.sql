-- The warm pool: clusters created ahead, hibernated, owned by no lab
-- session until a learner's Start claims one.
ALTER TABLE sandboxes ALTER COLUMN lab_session_id DROP NOT NULL;
ALTER TABLE sandboxes ADD COLUMN pool boolean NOT NULL DEFAULT false;
ALTER TABLE sandboxes ADD COLUMN claimed_at timestamptz;
-- A pool cluster nobody has claimed has no session; every other one has.
ALTER TABLE sandboxes ADD CONSTRAINT sandboxes_owner CHECK (pool OR lab_session_id IS NOT NULL);
CREATE INDEX sandboxes_unclaimed ON sandboxes (workers, image) WHERE pool AND lab_session_id IS NULL AND state <> 'deleted';

---- create above / drop below ----

DROP INDEX sandboxes_unclaimed;
DELETE FROM sandboxes WHERE lab_session_id IS NULL;
ALTER TABLE sandboxes DROP CONSTRAINT sandboxes_owner;
ALTER TABLE sandboxes DROP COLUMN claimed_at;
ALTER TABLE sandboxes DROP COLUMN pool;
ALTER TABLE sandboxes ALTER COLUMN lab_session_id SET NOT NULL;
