-- Placeholder: version 7 is reserved for the webhooks migration being
-- written on another branch (tern wants migrations numbered without gaps).
-- Merging that branch replaces this file with its 007; delete this one
-- then, before any release.
SELECT 1;
