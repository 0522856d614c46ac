package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/server/terminal"
	"github.com/podpath/podpath/store"
)

// terminals keeps one shell per (lab session, node). A shell outlives its
// websockets and ends with its session (or the server).
type terminals struct {
	s        *Server
	mu       sync.Mutex
	shells   map[termKey]*shellSlot
	upgrader websocket.Upgrader
}

// shellSlot holds the shell of one (session, node); its lock covers
// starting one.
type shellSlot struct {
	mu sync.Mutex
	sh *terminal.Shell
}

type termKey struct {
	session uuid.UUID
	node    string
}

func newTerminals(s *Server) *terminals {
	t := &terminals{s: s, shells: map[termKey]*shellSlot{}}
	t.upgrader = websocket.Upgrader{
		ReadBufferSize: 4096, WriteBufferSize: 32 * 1024,
		CheckOrigin: s.sameOrigin,
	}
	return t
}

// sameOrigin accepts websocket handshakes from pages of this server only:
// the Origin's host must be the request's Host or PUBLIC_URL's host.
func (s *Server) sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true // not a browser; the session cookie or token still applies
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if s.cfg.PublicURL != "" {
		if pu, err := url.Parse(s.cfg.PublicURL); err == nil && strings.EqualFold(pu.Host, u.Host) {
			return true
		}
	}
	return false
}

// shell returns the session's shell on node, starting one when there is
// none or the last one exited. Starting one asks Docker about the node, so
// it runs under the key's own lock, never the map's: one slow attach does
// not hold up other learners' terminals.
func (t *terminals) shell(ctx context.Context, sess *store.LabSession, sbName, node string, cols, rows uint16) (*terminal.Shell, error) {
	key := termKey{sess.ID, node}
	t.mu.Lock()
	slot := t.shells[key]
	if slot == nil {
		slot = &shellSlot{}
		t.shells[key] = slot
	}
	t.mu.Unlock()

	slot.mu.Lock()
	defer slot.mu.Unlock()
	if sh := slot.sh; sh != nil {
		select {
		case <-sh.Done():
		default:
			return sh, nil
		}
	}
	tty, err := t.s.engine.Target(sbName).Attach(ctx, node, cols, rows)
	if err != nil {
		// No shell came of it: the slot goes, so failed attaches (a node
		// name that is not there) leave nothing behind.
		t.mu.Lock()
		if t.shells[key] == slot && slot.sh == nil {
			delete(t.shells, key)
		}
		t.mu.Unlock()
		return nil, err
	}
	sh := terminal.New(tty)
	sh.SetSize(cols, rows)
	slot.sh = sh
	return sh, nil
}

// closeSession ends the shells of a session.
func (t *terminals) closeSession(id uuid.UUID) {
	t.mu.Lock()
	var closing []*shellSlot
	for k, slot := range t.shells {
		if k.session == id {
			closing = append(closing, slot)
			delete(t.shells, k)
		}
	}
	t.mu.Unlock()
	for _, slot := range closing {
		slot.close()
	}
}

func (t *terminals) closeAll() {
	t.mu.Lock()
	all := t.shells
	t.shells = map[termKey]*shellSlot{}
	t.mu.Unlock()
	for _, slot := range all {
		slot.close()
	}
}

// termSize reads ?cols= or ?rows=: absent is def, else 1..terminal.MaxSize.
func termSize(c echo.Context, name string, def uint16) (uint16, error) {
	v := c.QueryParam(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > terminal.MaxSize {
		return 0, errs.E(errs.Invalid, fmt.Sprintf("%s=%.20q: cols and rows must be whole numbers from 1 to %d", name, v, terminal.MaxSize))
	}
	return uint16(n), nil
}

// apiTerminal upgrades to the terminal websocket of a node. Only the
// session's owner gets here (requireUserAPI, then ownSession), from a page
// of this server (the Origin check).
func (s *Server) apiTerminal(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	cols, err := termSize(c, "cols", 80)
	if err != nil {
		return err
	}
	rows, err := termSize(c, "rows", 24)
	if err != nil {
		return err
	}
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return errs.E(errs.Invalid, "this endpoint speaks websocket; see docs/TERMINAL.md")
	}
	if !s.sameOrigin(c.Request()) {
		return errs.E(errs.Forbidden, "websocket from another origin refused")
	}
	ctx := c.Request().Context()
	// Opening a terminal is activity; record it before waking the cluster so
	// the reaper cannot freeze it under the new shell.
	if err := s.engine.Wake(ctx, sess); err != nil {
		return err
	}
	sb, err := s.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return err
	}
	if sb.State != store.SandboxReady {
		return errs.E(errs.Conflict, fmt.Sprintf("the cluster is %s, not ready; open the terminal when it is", sb.State))
	}
	node := c.Param("node")
	if !hasNode(sb.Nodes, node) {
		return errs.E(errs.NotFound, fmt.Sprintf("the cluster has no node %.40q", node))
	}
	sh, err := s.terms.shell(ctx, sess, sb.Name, node, cols, rows)
	if err != nil {
		return errs.E(errs.NotFound, err.Error())
	}
	conn, err := s.terms.upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil // the upgrader answered already
	}
	s.metrics.terminals.Inc()
	defer s.metrics.terminals.Dec()
	// Which replica holds a terminal is in its log: the one to look at
	// when a learner's terminal misbehaves.
	s.log.Info("terminal opened", "session", sess.ID, "node", node)
	err = terminal.Serve(conn, sh, node, terminal.DefaultLimits, terminal.ClientOptions{
		OnInput:    func() { s.engine.Touch(sess.ID) },
		Foreground: s.foreground(sb.Name, node),
	})
	if err != nil {
		s.log.Info("terminal closed", "session", sess.ID, "node", node, "reason", err)
	}
	return nil
}

func (s *shellSlot) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sh != nil {
		s.sh.Close()
	}
}

// foreground asks the node's shell keeper what runs in the foreground of
// the learner's shell, for a run button (terminal.Shell.Run).
func (s *Server) foreground(sbName, node string) terminal.Foreground {
	return func(ctx context.Context) (string, bool) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		name, err := s.engine.Target(sbName).Foreground(ctx, node)
		return name, err == nil
	}
}

// count is how many shells the server keeps.
func (t *terminals) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.shells)
}

// hasNode reports whether a sandbox's nodes (as stored) name node.
func hasNode(raw json.RawMessage, node string) bool {
	for _, n := range nodeViews(raw) {
		if n.Alias == node {
			return true
		}
	}
	return false
}
