package workshops

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/store"
)

// Limits is the budget of wrong join codes, by client address and by
// browser (limits/limits.go keeps it in Postgres for every replica).
type Limits interface {
	// JoinRefused says whether the address or the browser has no wrong
	// code left.
	JoinRefused(ctx context.Context, ip, browser string) (bool, error)
	// JoinMissed counts one wrong code against them.
	JoinMissed(ctx context.Context, ip, browser string) error
}

// maxCode is the longest text read as a code: longer is a miss unread.
const maxCode = 20

// Open finds an open workshop by code, or says why it cannot be joined. A
// code that opens no workshop now — unknown, retired, or of a workshop not
// yet started or already ended — is a miss, answered the same way whatever
// it was (it names no workshop) and counted against the browser and the
// client address; past a limit every code is refused, the right one too,
// so the answers tell a guesser nothing.
func (c *Class) Open(ctx context.Context, code, ip, browser string) (*store.Workshop, error) {
	code = NormalizeCode(code)
	if code == "" {
		return nil, errs.Keyed(errs.Invalid, "errjoinnocode", "send the workshop's join code")
	}
	if out, err := c.Limits.JoinRefused(ctx, ip, browser); err != nil {
		return nil, err
	} else if out {
		return nil, errs.Keyed(errs.TooMany, "errjointoomany", "too many wrong join codes; wait a minute")
	}
	var w *store.Workshop
	err := store.ErrNotFound
	if len(code) <= maxCode {
		w, err = c.Store.WorkshopByCode(ctx, code)
	}
	if err == nil && w.State(time.Now()) != store.WorkshopOpen {
		err = store.ErrNotFound
	}
	if errors.Is(err, store.ErrNotFound) {
		if err := c.Limits.JoinMissed(ctx, ip, browser); err != nil {
			return nil, err
		}
		shown := fmt.Sprintf("%.20s", DisplayCode(code))
		return nil, errs.Keyed(errs.NotFound, "errjoinnone", "no open workshop has the code "+shown, "code", shown)
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// JoinRequest is one join: a code and a name, from a signed-in user or
// (User nil) someone who becomes a guest.
type JoinRequest struct {
	Code, Name string
	User       *store.User
	// IP and Browser are what wrong codes count against (Browser: the
	// pre-session cookie or the account, "" for neither).
	IP, Browser string
	// GuestSeed names the browser for its guest (the pre-session cookie),
	// so that a double click makes one guest; "" for a random one.
	GuestSeed string
}

// Joined is a join that took a seat.
type Joined struct {
	Workshop *store.Workshop
	// User is the learner: the signed-in user, or the guest.
	User *store.User
	// Session is the learner's session of the workshop (nil when Join
	// also returns why none could be started).
	Session *store.LabSession
	// Guest: a guest was made (or taken again): the caller signs them in.
	Guest bool
}

// guestDoubleJoin is how long after a guest joined a join from the same
// browser is taken for the same person (a double click, a reload of the
// form's answer); later, it is someone else at the same computer.
const guestDoubleJoin = 2 * time.Minute

// maxName is the longest name a learner may give, in characters.
const maxName = 60

// Join seats the user (or a new guest) in the workshop of the code and
// starts their session of its first lab not done yet. A learner seated
// whose session cannot start (an active one outside the workshop) gets
// both Joined and the error.
func (c *Class) Join(ctx context.Context, r JoinRequest) (*Joined, error) {
	w, err := c.Open(ctx, r.Code, r.IP, r.Browser)
	if err != nil {
		return nil, err
	}
	u := r.User
	name := strings.TrimSpace(r.Name)
	if utf8.RuneCountInString(name) > maxName {
		return nil, errs.Keyed(errs.Invalid, "errjoinnamelong", "the name can have at most 60 characters")
	}
	var guest *store.Guest
	switch {
	case u == nil && !w.Guests:
		return nil, errs.Keyed(errs.Unauthenticated, "errjoinaccount", "the workshop needs an account: sign in, then join", "title", w.Title)
	case u == nil:
		if name == "" {
			return nil, errs.Keyed(errs.Invalid, "errjoinname", "send your name")
		}
		guest = &store.Guest{Email: guestEmail(w, r.GuestSeed), Name: name}
	case u.GuestWorkshop != 0 && u.GuestWorkshop != w.ID:
		return nil, errs.Keyed(errs.Forbidden, "errjoinotherguest", "you are a guest of another workshop: sign out, then join")
	default:
		if name == "" {
			name = u.Name
		}
		// Refused before a seat is taken: a session outside the workshop.
		if active, err := c.Store.ActiveLabSession(ctx, u.ID); err == nil && (active.WorkshopID == nil || *active.WorkshopID != w.ID) {
			return nil, &ActiveElsewhereError{Workshop: w, Session: active}
		}
	}
	var uid int64
	if u != nil {
		uid = u.ID
	}
	ln, gu, joined, err := c.Store.JoinWorkshop(ctx, w.ID, uid, name, guest)
	if errors.Is(err, store.ErrGuestTaken) {
		prev, perr := c.Store.UserByEmail(ctx, guest.Email)
		switch {
		case perr != nil || prev.GuestWorkshop != w.ID:
			return nil, errs.Keyed(errs.Conflict, "errjoinreload", "this browser joined as a guest already; reload the page")
		case time.Since(prev.CreatedAt) < guestDoubleJoin:
			// The same browser joined a moment ago (a double click): that
			// guest, and its seat, are this one.
			ln, _, joined, err = c.Store.JoinWorkshop(ctx, w.ID, prev.ID, name, nil)
			gu = prev
		default:
			// The browser's earlier guest is someone else at the same
			// computer, whose sign-in is gone: a guest of one's own.
			guest.Email = guestEmail(w, "")
			ln, gu, joined, err = c.Store.JoinWorkshop(ctx, w.ID, 0, name, guest)
		}
	}
	switch {
	case errors.Is(err, store.ErrWorkshopFull):
		return nil, errs.Keyed(errs.Conflict, "errjoinfull", "every seat of the workshop is taken", "title", w.Title, "seats", strconv.Itoa(w.Seats))
	case errors.Is(err, store.ErrWorkshopOver):
		return nil, errs.Keyed(errs.Gone, "errjoinended", "the workshop has ended", "title", w.Title)
	case err != nil:
		return nil, err
	}
	if gu != nil {
		u = gu
	}
	if joined {
		c.Log.Info("learner joined a workshop", "workshop", w.ID, "user", ln.UserID, "guest", gu != nil)
	}
	out := &Joined{Workshop: w, User: u, Guest: gu != nil}
	out.Session, err = c.Session(ctx, w, u.ID)
	c.LearnerChanged(w.ID, u.ID)
	return out, err
}

// guestEmail names a guest's account: from the browser's seed when it has
// one, so that the same browser joining twice at once makes one guest, not
// two; random otherwise.
func guestEmail(w *store.Workshop, seed string) string {
	if seed != "" {
		sum := sha256.Sum256([]byte(fmt.Sprintf("podpath guest %d %s", w.ID, seed)))
		return "guest-" + hex.EncodeToString(sum[:10]) + "@guests.podpath.invalid"
	}
	b := make([]byte, 9)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return "guest-" + strings.ToLower(base64.RawURLEncoding.EncodeToString(b)) + "@guests.podpath.invalid"
}
