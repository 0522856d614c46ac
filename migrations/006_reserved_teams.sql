-- A placeholder for migration 006, which another branch (teams) owns. tern
-- refuses a gap in the numbering, so webhooks' 007 needs a 006 to follow.
-- When the teams branch is merged, delete this file: its 006 takes the
-- place. A database migrated with this placeholder has version 6 recorded
-- and would skip the real 006; only development databases made from this
-- branch before the merge are in that case (drop and re-create them).
SELECT 1;

---- create above / drop below ----

SELECT 1;
