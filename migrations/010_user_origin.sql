-- Who made each account (issue 19): single sign-on that links a first
-- sign-in to an account by its e-mail drops the password of an account
-- someone made by signing up (nobody verified the address), whenever that
-- was, and keeps the password of one an admin made.
--   signup: made on /signup or POST /api/signup
--   admin:  made by an admin (podpath user create, the first admin)
--   sso:    made at a first single sign-on
--   guest:  a workshop's guest
ALTER TABLE users ADD COLUMN origin text NOT NULL DEFAULT 'admin'
    CHECK (origin IN ('signup', 'admin', 'sso', 'guest'));

-- Accounts made before this: guests are known; an account with an identity
-- and no password was made by single sign-on; a learner with a password
-- may have signed up (an admin's learner accounts are counted with them:
-- on linking they lose a password their owner no longer needs).
UPDATE users SET origin = 'guest' WHERE guest_workshop_id IS NOT NULL;
UPDATE users SET origin = 'sso'
    WHERE guest_workshop_id IS NULL AND password_hash = ''
      AND EXISTS (SELECT 1 FROM user_identities i WHERE i.user_id = users.id);
UPDATE users SET origin = 'signup'
    WHERE guest_workshop_id IS NULL AND password_hash <> '' AND role = 'learner';
