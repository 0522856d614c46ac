package server_test

import (
	"testing"
	"time"

	"github.com/podpath/podpath/internal/fakesandbox"
)

// Two replicas on one database: an instructor's board on one hears of a
// learner working through the other within 2 s, a broadcast sent through
// one reaches the learner's page on the other, and ending the class on one
// ends the board on the other. Only the first replica leads (runs the
// session engine); the second asks it over the bus.
func TestWorkshopAcrossReplicas(t *testing.T) {
	cfg := workshopConfig(t)
	fake := fakesandbox.New()
	a := startServer(t, cfg, fake)
	b := startServer(t, cfg, fake)
	now := time.Now()
	grace := a.instructor(t, "grace@example.com")
	w := grace.createWorkshop(t, workshopBody("Class", now.Add(-time.Minute), now.Add(time.Hour), 3, true))
	wid := itoa(w.ID)

	// The board is watched on B; the guest joins and works on A.
	grace.base = b.url
	board := make(chan [2]string, 64)
	go grace.sseAsync(t, "/api/workshops/"+wid+"/events", board)
	waitEvent(t, board, "board", "", 5*time.Second)
	ada := newClient(t, a.url)
	r, j := ada.join(w.Code, "Ada")
	if r.status != 200 {
		t.Fatalf("join on A: %d %s", r.status, r.body)
	}
	waitEvent(t, board, "learner", `"name":"Ada"`, 2*time.Second)
	waitReady(t, ada, j.Session.ID)
	var lab struct{ Steps []struct{ ID string } }
	ada.do("GET", "/api/labs/yaml-to-process", nil).json(t, &lab)
	if r := ada.do("POST", "/api/sessions/"+j.Session.ID+"/steps/"+lab.Steps[0].ID+"/check", map[string]string{"answer": "wrong"}); r.status != 200 {
		t.Fatalf("check on A: %d %s", r.status, r.body)
	}
	waitEvent(t, board, "learner", `"failed":1`, 2*time.Second)
	if r := ada.do("POST", "/api/sessions/"+j.Session.ID+"/hand", map[string]bool{"raised": true}); r.status != 204 {
		t.Fatalf("hand on A: %d %s", r.status, r.body)
	}
	waitEvent(t, board, "learner", `"hand":true`, 2*time.Second)

	// A broadcast through B reaches the learner's stream on A.
	learner := make(chan [2]string, 64)
	go ada.sseAsync(t, "/api/sessions/"+j.Session.ID+"/events", learner)
	waitEvent(t, learner, "session", "", 5*time.Second)
	if r := grace.do("POST", "/api/workshops/"+wid+"/broadcast", map[string]string{"message": "Break until 11:00"}); r.status != 204 {
		t.Fatalf("broadcast on B: %d %s", r.status, r.body)
	}
	waitEvent(t, learner, "broadcast", "Break until 11:00", 2*time.Second)
	waitEvent(t, board, "workshop", "Break until 11:00", 2*time.Second)

	// Ended through A: the board on B says so and closes.
	grace.base = a.url
	if r := grace.do("POST", "/api/workshops/"+wid+"/end", nil); r.status != 200 && r.status != 204 {
		t.Fatalf("end on A: %d %s", r.status, r.body)
	}
	waitEvent(t, board, "ended", "", 5*time.Second)
	var sess sessionView
	deadline := time.Now().Add(10 * time.Second)
	for {
		ada.do("GET", "/api/sessions/"+j.Session.ID, nil).json(t, &sess)
		if sess.State == "ended" || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if sess.State != "ended" {
		t.Fatalf("the learner's session after the class ended: %s", sess.State)
	}
}
