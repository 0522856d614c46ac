-- Join codes are retired when their workshop ends (issue 19): an ended
-- workshop keeps no code, so a code found by trying opens nothing after
-- the class, and codes can be drawn again. New codes have 10 characters;
-- the 6-character codes of workshops still open keep working until those
-- workshops end.
ALTER TABLE workshops ALTER COLUMN code DROP NOT NULL;
UPDATE workshops SET code = NULL WHERE ended_at IS NOT NULL OR ends_at <= now();

---- create above / drop below ----

-- Lower case never matches a typed code (codes are read in upper case).
UPDATE workshops SET code = 'retired-' || id WHERE code IS NULL;
ALTER TABLE workshops ALTER COLUMN code SET NOT NULL;
