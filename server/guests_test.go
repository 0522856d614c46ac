package server_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/fakesandbox"
)

// On a shared computer the next person who joins a workshop as a guest is
// a guest of their own, not the one before them: signing out forgets the
// browser's guest, and a join from the same browser counts as the same
// guest only within a moment (a double click). Both used to sign the next
// person in as the previous guest, with their cluster and progress.
func TestNextGuestOnASharedComputer(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	now := time.Now()
	grace := e.instructor(t, "grace-guests@example.com")
	w := grace.createWorkshop(t, workshopBody("Shared PCs", now.Add(-time.Minute), now.Add(time.Hour), 10, true))
	pc := newClient(t, e.url)
	join := func(name string) int64 {
		t.Helper()
		token := pc.formToken("/join/" + w.Code)
		res, body := pc.postForm("/join/"+w.Code, url.Values{"csrf": {token}, "name": {name}})
		if res.StatusCode != 200 {
			t.Fatalf("%s joins: %d %.300s", name, res.StatusCode, body)
		}
		u := me(t, pc)
		if u.Name != name {
			t.Fatalf("%s joined and is signed in as %q (user %d)", name, u.Name, u.ID)
		}
		return u.ID
	}
	// forget drops the browser's sign-in only, as an expired session does.
	forget := func() {
		u, _ := url.Parse(e.url)
		var keep []*http.Cookie
		for _, ck := range pc.http.Jar.Cookies(u) {
			if ck.Name != "podpath_session" {
				keep = append(keep, ck)
			}
		}
		pc.http.Jar, _ = cookiejar.New(nil)
		pc.http.Jar.SetCookies(u, keep)
	}

	ann := join("Ann")
	if res, body := pc.postForm("/logout", url.Values{"csrf": {pc.formToken("/")}}); res.StatusCode != 200 {
		t.Fatalf("sign out: %d %.200s", res.StatusCode, body)
	}
	ben := join("Ben")
	if ben == ann {
		t.Fatal("after Ann signed out, Ben joined as Ann's guest account")
	}
	// A double click: the same browser a moment later is the same guest.
	forget()
	if again := join("Ben"); again != ben {
		t.Errorf("Ben joining again at once is user %d, not %d", again, ben)
	}
	// Later, with the sign-in gone but the browser's token still there,
	// it is someone else.
	conn, err := pgx.Connect(context.Background(), e.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE users SET created_at = created_at - interval '3 minutes' WHERE id = $1`, ben); err != nil {
		t.Fatal(err)
	}
	forget()
	if cy := join("Cy"); cy == ben || cy == ann {
		t.Errorf("Cy, at the computer minutes after Ben's sign-in expired, joined as user %d (Ann %d, Ben %d)", cy, ann, ben)
	}
}
