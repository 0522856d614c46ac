package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/testenv"
	"github.com/podpath/podpath/store"
)

func open(t *testing.T) (*store.Store, string) {
	t.Helper()
	url := testenv.Postgres(t)
	st, err := store.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	if _, _, err := st.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return st, url
}

func TestMigrateIsIdempotentAndRefusesNewerSchema(t *testing.T) {
	st, url := open(t)
	ctx := context.Background()
	from, to, err := st.Migrate(ctx)
	if err != nil || from != to || to != store.SchemaVersion() {
		t.Fatalf("second migrate: %d -> %d, %v", from, to, err)
	}
	if err := st.CheckSchema(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE schema_version SET version = version + 1"); err != nil {
		t.Fatal(err)
	}
	_, _, err = st.Migrate(ctx)
	if !errors.Is(err, store.ErrSchemaTooNew) || !strings.Contains(err.Error(), "newer podpath") {
		t.Errorf("migrating a newer schema: %v", err)
	}
	if err := st.CheckSchema(ctx); !errors.Is(err, store.ErrSchemaTooNew) {
		t.Errorf("check of a newer schema: %v", err)
	}
}

func TestOpenSaysWhatToDo(t *testing.T) {
	_, err := store.Open(context.Background(), "")
	if err == nil || !strings.Contains(err.Error(), "DATABASE_URL") {
		t.Errorf("empty URL: %v", err)
	}
	_, err = store.Open(context.Background(), "postgres://nobody:x@127.0.0.1:1/none")
	if err == nil || !strings.Contains(err.Error(), "is it running") {
		t.Errorf("unreachable database: %v", err)
	}
}

func TestUsersAndWebSessions(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	u, err := st.CreateUser(ctx, "Ada@Example.com", "Ada", "hash", store.RoleLearner)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateUser(ctx, "ada@example.COM", "Other", "hash", store.RoleLearner); !errors.Is(err, store.ErrEmailTaken) {
		t.Errorf("duplicate email (other case): %v", err)
	}
	got, err := st.UserByEmail(ctx, "ADA@example.com")
	if err != nil || got.ID != u.ID {
		t.Errorf("lookup ignoring case: %v %v", got, err)
	}
	if _, err := st.UserByEmail(ctx, "nobody@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing user: %v", err)
	}
	tok := []byte("0123456789abcdef0123456789abcdef")
	if err := st.CreateWebSession(ctx, tok, u.ID, "csrf", time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ws, err := st.WebSessionByToken(ctx, tok)
	if err != nil || ws.User.Email != "Ada@Example.com" || ws.CSRFToken != "csrf" {
		t.Fatalf("web session: %+v %v", ws, err)
	}
	expired := []byte("expired-expired-expired-expired!")
	if err := st.CreateWebSession(ctx, expired, u.ID, "c", time.Now().Add(-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.WebSessionByToken(ctx, expired); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired sign-in still works: %v", err)
	}
	if n, err := st.DeleteExpiredWebSessions(ctx); err != nil || n != 1 {
		t.Errorf("delete expired: %d %v", n, err)
	}
}

func TestLabSessionsAttemptsAndProgress(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	u, _ := st.CreateUser(ctx, "grace@example.com", "Grace", "h", store.RoleLearner)
	id := uuid.New()
	sess, err := st.CreateLabSession(ctx, store.NewLabSession{ID: id, UserID: u.ID, LabID: "lab", Lifetime: time.Hour, IdleTimeout: 10 * time.Minute, SandboxName: "ls-1", Image: "img", Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	if sess.State != store.SessionActive || sess.ExpiresAt.Sub(sess.CreatedAt).Round(time.Minute) != time.Hour {
		t.Errorf("session %+v", sess)
	}
	// One active session per learner; the failed insert leaves no sandbox row.
	_, err = st.CreateLabSession(ctx, store.NewLabSession{ID: uuid.New(), UserID: u.ID, LabID: "other", Lifetime: time.Hour, IdleTimeout: time.Minute, SandboxName: "ls-2", Image: "img"})
	if !errors.Is(err, store.ErrActiveSession) {
		t.Errorf("second active session: %v", err)
	}
	if active, err := st.ActiveLabSessions(ctx); err != nil || len(active) != 1 || active[0].ID != id {
		t.Errorf("active sessions: %+v %v", active, err)
	}
	if mine, err := st.UserLabSessions(ctx, u.ID, 10); err != nil || len(mine) != 1 || mine[0].LabID != "lab" {
		t.Errorf("the learner's sessions: %+v %v", mine, err)
	}
	live, _ := st.UndeletedSandboxes(ctx)
	if len(live) != 1 || live[0].Name != "ls-1" {
		t.Errorf("live sandboxes after the refused session: %+v", live)
	}

	if err := st.AppendSandboxProgress(ctx, "ls-1", map[string]any{"stage": "nodes", "done": false}); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendSandboxProgress(ctx, "ls-1", map[string]any{"stage": "nodes", "done": true}); err != nil {
		t.Fatal(err)
	}
	if err := st.SetSandboxState(ctx, "ls-1", store.SandboxReady, nil); err != nil {
		t.Fatal(err)
	}
	sb, _ := st.SandboxOf(ctx, id)
	var progress []map[string]any
	json.Unmarshal(sb.Progress, &progress)
	if sb.State != store.SandboxReady || sb.ReadyAt == nil || len(progress) != 2 || progress[1]["done"] != true {
		t.Errorf("sandbox %+v progress %v", sb, progress)
	}

	name, _ := json.Marshal(map[string]string{"en": "a check"})
	fail := &store.Attempt{LabSessionID: id, StepID: "s1", Kind: store.AttemptCheck, Passed: false, Duration: time.Second,
		Results: []store.CheckResult{{Index: 0, Name: name, Passed: false, Observed: "Pending", Feedback: json.RawMessage(`{"en":"look"}`)}}}
	if err := st.RecordAttempt(ctx, fail); err != nil {
		t.Fatal(err)
	}
	pass := &store.Attempt{LabSessionID: id, StepID: "s1", Kind: store.AttemptCheck, Passed: true,
		Results: []store.CheckResult{{Index: 0, Name: name, Passed: true, Observed: "Running", ObservedWords: json.RawMessage(`{"en": "web is Running", "zh": "web 处于 Running 状态"}`)}}}
	if err := st.RecordAttempt(ctx, pass); err != nil {
		t.Fatal(err)
	}
	skip := &store.Attempt{LabSessionID: id, StepID: "s2", Kind: store.AttemptSkip, Passed: true}
	if err := st.RecordAttempt(ctx, skip); err != nil {
		t.Fatal(err)
	}
	statuses, err := st.StepStatuses(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if s := statuses["s1"]; s.Status != store.StepPassed || s.Attempts != 2 || s.LastAttemptID != pass.ID {
		t.Errorf("s1 status %+v", s)
	}
	if s := statuses["s2"]; s.Status != store.StepSkipped {
		t.Errorf("s2 status %+v", s)
	}
	last, err := st.LastAttempt(ctx, id, "s1")
	if err != nil || last.ID != pass.ID || len(last.Results) != 1 || last.Results[0].Observed != "Running" {
		t.Errorf("last attempt %+v %v", last, err)
	}
	var words map[string]string
	if err := json.Unmarshal(last.Results[0].ObservedWords, &words); err != nil || words["zh"] != "web 处于 Running 状态" {
		t.Errorf("observed words read back as %s (%v)", last.Results[0].ObservedWords, err)
	}
	// The status follows the last attempt, even after a pass.
	again := &store.Attempt{LabSessionID: id, StepID: "s1", Kind: store.AttemptCheck, Passed: false}
	st.RecordAttempt(ctx, again)
	statuses, _ = st.StepStatuses(ctx, id)
	if statuses["s1"].Status != store.StepFailed {
		t.Errorf("status after a failed re-check: %+v", statuses["s1"])
	}

	ext, err := st.ExtendLabSession(ctx, id, 2*time.Hour, 1)
	if err != nil || ext.Extensions != 1 || ext.ExpiresAt.Sub(sess.ExpiresAt).Round(time.Minute) != 2*time.Hour {
		t.Errorf("extend: %+v %v", ext, err)
	}
	if _, err := st.ExtendLabSession(ctx, id, time.Hour, 1); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("extending past the limit: %v", err)
	}
	if err := st.EndLabSession(ctx, id, "done"); err != nil {
		t.Fatal(err)
	}
	ended, _ := st.LabSession(ctx, id)
	if ended.State != store.SessionEnded || ended.EndReason == nil || *ended.EndReason != "done" {
		t.Errorf("ended session %+v", ended)
	}
	// Now a new session may start.
	if _, err := st.CreateLabSession(ctx, store.NewLabSession{ID: uuid.New(), UserID: u.ID, LabID: "other", Lifetime: time.Hour, IdleTimeout: time.Minute, SandboxName: "ls-3", Image: "img"}); err != nil {
		t.Errorf("new session after ending the first: %v", err)
	}
}

// The quickstart makes the first admin on every run; only the first run
// makes one.
func TestCreateFirstAdmin(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, "learner@example.com", "L", "x", store.RoleLearner); err != nil {
		t.Fatal(err)
	}
	u, created, err := st.CreateFirstAdmin(ctx, "admin@example.com", "Admin", "hash")
	if err != nil || !created || u.Role != store.RoleAdmin || u.Email != "admin@example.com" {
		t.Fatalf("first admin: %+v %v %v", u, created, err)
	}
	again, created, err := st.CreateFirstAdmin(ctx, "other@example.com", "Other", "hash")
	if err != nil || created || again.ID != u.ID {
		t.Errorf("second call: %+v %v %v; want the first admin, nothing created", again, created, err)
	}
	if _, err := st.UserByEmail(ctx, "other@example.com"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the second call made an account for other@example.com: %v", err)
	}
	// An email taken by a learner, with no admin yet, is refused as such.
	st2, _ := open(t)
	if _, err := st2.CreateUser(ctx, "taken@example.com", "T", "x", store.RoleLearner); err != nil {
		t.Fatal(err)
	}
	if _, _, err := st2.CreateFirstAdmin(ctx, "taken@example.com", "T", "x"); !errors.Is(err, store.ErrEmailTaken) {
		t.Errorf("admin with a learner's email: %v", err)
	}
}

// A session keeps the mode it was started in; one started without a mode is
// guided, and Postgres refuses a mode it does not know.
func TestLabSessionMode(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	a, _ := st.CreateUser(ctx, "a@example.com", "A", "h", store.RoleLearner)
	b, _ := st.CreateUser(ctx, "b@example.com", "B", "h", store.RoleLearner)
	c, _ := st.CreateUser(ctx, "c@example.com", "C", "h", store.RoleLearner)
	guided, err := st.CreateLabSession(ctx, store.NewLabSession{ID: uuid.New(), UserID: a.ID, LabID: "lab", Lifetime: time.Hour, IdleTimeout: time.Minute, SandboxName: "ls-a", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	challenge, err := st.CreateLabSession(ctx, store.NewLabSession{ID: uuid.New(), UserID: b.ID, LabID: "lab", Mode: store.ModeChallenge, Lifetime: time.Hour, IdleTimeout: time.Minute, SandboxName: "ls-b", Image: "img"})
	if err != nil {
		t.Fatal(err)
	}
	if guided.Mode != store.ModeGuided || challenge.Mode != store.ModeChallenge {
		t.Errorf("created in modes %q and %q, want guided and challenge", guided.Mode, challenge.Mode)
	}
	if again, err := st.LabSession(ctx, challenge.ID); err != nil || again.Mode != store.ModeChallenge {
		t.Errorf("read back: %+v %v", again, err)
	}
	if _, err := st.CreateLabSession(ctx, store.NewLabSession{ID: uuid.New(), UserID: c.ID, LabID: "lab", Mode: "expert", Lifetime: time.Hour, IdleTimeout: time.Minute, SandboxName: "ls-c", Image: "img"}); err == nil {
		t.Error("a session in mode \"expert\" was stored")
	}
	if n, _ := st.UndeletedSandboxes(ctx); len(n) != 2 {
		t.Errorf("%d sandboxes after the refused session, want 2", len(n))
	}
}

// InTx: every store call made with its context is part of one
// transaction — the store's own transactions become savepoints — and an
// error undoes all of them; what waits for the commit runs only after one.
func TestInTx(t *testing.T) {
	st, _ := open(t)
	ctx := context.Background()
	u, err := st.CreateUser(ctx, "ada@example.com", "Ada", "x", store.RoleLearner)
	if err != nil {
		t.Fatal(err)
	}
	hook, err := st.CreateWebhook(ctx, "http://127.0.0.1:1/", "0123456789abcdef", []string{"lab.started"}, u.ID)
	if err != nil {
		t.Fatal(err)
	}
	newSession := func(ctx context.Context) (*store.LabSession, error) {
		id := uuid.New()
		return st.CreateLabSession(ctx, store.NewLabSession{ID: id, UserID: u.ID, LabID: "l", Lifetime: time.Hour, IdleTimeout: time.Hour,
			SandboxName: "ls-t-" + id.String()[:8], Image: "img", Workers: 1})
	}
	enqueue := func(ctx context.Context, key string) error {
		_, _, err := st.EnqueueWebhookEvent(ctx, store.WebhookEvent{ID: uuid.New(), Type: "lab.started", Body: []byte(`{}`), Key: key})
		return err
	}
	refused := errors.New("refused")
	ran := 0
	err = st.InTx(ctx, func(ctx context.Context) error {
		if _, err := newSession(ctx); err != nil {
			return err
		}
		if err := enqueue(ctx, "once"); err != nil {
			return err
		}
		store.AfterCommit(ctx, func() { ran++ })
		return refused
	})
	if !errors.Is(err, refused) {
		t.Fatalf("InTx returned %v, want fn's error", err)
	}
	if _, err := st.ActiveLabSession(ctx, u.ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a session written in a failed InTx is there: %v", err)
	}
	if ds, _ := st.WebhookDeliveries(ctx, hook.ID, 10); len(ds) != 0 || ran != 0 {
		t.Errorf("after a failed InTx: %d deliveries, after-commit ran %d times", len(ds), ran)
	}

	// A savepoint that fails is undone alone, with what waited for it.
	err = st.InTx(ctx, func(ctx context.Context) error {
		if _, err := newSession(ctx); err != nil {
			return err
		}
		_ = st.InTx(ctx, func(ctx context.Context) error {
			store.AfterCommit(ctx, func() { ran += 100 })
			if err := enqueue(ctx, "inner"); err != nil {
				return err
			}
			return refused
		})
		if err := enqueue(ctx, "once"); err != nil {
			return err
		}
		store.AfterCommit(ctx, func() { ran++ })
		if ran != 0 {
			t.Error("after-commit ran before the commit")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.ActiveLabSession(ctx, u.ID); err != nil {
		t.Errorf("the committed session: %v", err)
	}
	ds, _ := st.WebhookDeliveries(ctx, hook.ID, 10)
	if len(ds) != 1 || ran != 1 {
		t.Errorf("after the commit: %d deliveries (want the outer one), after-commit ran %d (want 1)", len(ds), ran)
	}
	// The key recorded in the committed transaction holds; the one of the
	// undone savepoint does not.
	if _, dup, _ := st.EnqueueWebhookEvent(ctx, store.WebhookEvent{ID: uuid.New(), Type: "lab.started", Body: []byte(`{}`), Key: "once"}); !dup {
		t.Error("the committed key was not recorded")
	}
	if _, dup, _ := st.EnqueueWebhookEvent(ctx, store.WebhookEvent{ID: uuid.New(), Type: "lab.started", Body: []byte(`{}`), Key: "inner"}); dup {
		t.Error("the undone savepoint's key was recorded")
	}
	// Outside InTx, AfterCommit runs at once.
	store.AfterCommit(ctx, func() { ran++ })
	if ran != 2 {
		t.Errorf("AfterCommit outside a transaction did not run at once")
	}
}
