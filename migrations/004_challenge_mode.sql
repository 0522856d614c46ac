-- A lab session is taken in a mode, chosen at Start: guided (run buttons,
-- commands shown) or challenge (no run buttons, commands behind "show me").
-- Sessions from before this migration were guided.
ALTER TABLE lab_sessions ADD COLUMN mode text NOT NULL DEFAULT 'guided' CHECK (mode IN ('guided', 'challenge'));

---- create above / drop below ----

ALTER TABLE lab_sessions DROP COLUMN mode;
