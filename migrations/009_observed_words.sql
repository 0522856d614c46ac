-- What a check observed, in words, by language ({"en": ..., "zh": ...}):
-- what the lab page and the workshop board show (issue 18). observed keeps
-- the raw value with the grader's English notes, for instructors and
-- debugging. Results recorded before this migration have no words, and
-- show observed.
ALTER TABLE check_results ADD COLUMN observed_words jsonb;

---- create above / drop below ----

ALTER TABLE check_results DROP COLUMN observed_words;
