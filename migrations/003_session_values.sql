-- Each lab session's values, drawn at Start from the lab's values: (names,
-- counts, limits), so that no two sessions share answers. A session keeps
-- them across restarts and cluster resets.
ALTER TABLE lab_sessions ADD COLUMN lab_values jsonb NOT NULL DEFAULT '{}';

---- create above / drop below ----

ALTER TABLE lab_sessions DROP COLUMN lab_values;
