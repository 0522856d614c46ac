package server

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/gorilla/websocket"
	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/server/terminal"
	"github.com/podpath/podpath/store"
)

func (s *Server) apiResultsCSV(c echo.Context) error {
	w, rows, err := s.results(c)
	if err != nil {
		return err
	}
	res := c.Response()
	res.Header().Set("Content-Type", "text/csv; charset=utf-8")
	res.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="workshop-%d-results.csv"`, w.ID))
	res.WriteHeader(http.StatusOK)
	cw := newCSVWriter(res)
	_ = cw.Write([]string{"learner", "learner_id", "guest", "lab", "step", "step_title", "status", "passed", "attempts",
		"failed_attempts", "time_to_pass_seconds", "skipped", "hints", "at"})
	for _, r := range rows {
		ttp, at := "", ""
		if r.TimeToPassSeconds != nil {
			ttp = strconv.Itoa(*r.TimeToPassSeconds)
		}
		if r.At != nil {
			at = r.At.UTC().Format("2006-01-02T15:04:05Z")
		}
		_ = cw.Write([]string{csvSafe(r.Learner), strconv.FormatInt(r.LearnerID, 10), strconv.FormatBool(r.Guest), r.Lab, r.Step, csvSafe(r.StepTitle),
			r.Status, strconv.FormatBool(r.Passed), strconv.Itoa(r.Attempts), strconv.Itoa(r.FailedAttempts), ttp,
			strconv.FormatBool(r.Skipped), strconv.Itoa(r.Hints), at})
	}
	cw.Flush()
	return cw.Error()
}

// utf8BOM starts every CSV podpath serves: without it Excel reads the file
// in the system's code page and garbles names that are not ASCII.
const utf8BOM = "\ufeff"

// newCSVWriter writes the byte-order mark and returns a CSV writer after it.
func newCSVWriter(w io.Writer) *csv.Writer {
	_, _ = io.WriteString(w, utf8BOM)
	return csv.NewWriter(w)
}

// csvSafe keeps a learner-chosen name from being read as a formula by a
// spreadsheet.
func csvSafe(v string) string {
	if v != "" && (v[0] == '=' || v[0] == '+' || v[0] == '-' || v[0] == '@' || v[0] == '\t' || v[0] == '\r') {
		return "'" + v
	}
	return v
}

// apiWorkshopTerminal opens a learner's terminal for the workshop's
// instructor: mode=watch (read-only, the default) or mode=control (a
// take-over: input reaches the learner's shell, the learner's page shows a
// banner and can end it, and an audit record is kept).
func (s *Server) apiWorkshopTerminal(c echo.Context) error {
	w, id, err := s.staffLearner(c)
	if err != nil {
		return err
	}
	mode := c.QueryParam("mode")
	if mode == "" {
		mode = "watch"
	}
	if mode != "watch" && mode != "control" {
		return errs.E(errs.Invalid, fmt.Sprintf(`mode=%.20q: use "watch" (read-only) or "control" (take over)`, mode))
	}
	ctx := c.Request().Context()
	ln, err := s.store.WorkshopLearner(ctx, w.ID, id)
	if err != nil {
		return errs.E(errs.NotFound, translate("errnolearner", lang(c)))
	}
	sess, err := s.store.ActiveLabSession(ctx, id)
	if err != nil || sess.WorkshopID == nil || *sess.WorkshopID != w.ID {
		return errs.E(errs.Conflict, msg(lang(c), "errwatchnosession", "name", ln.Name))
	}
	if !websocket.IsWebSocketUpgrade(c.Request()) {
		return errs.E(errs.Invalid, "this endpoint speaks websocket; see docs/TERMINAL.md")
	}
	if !s.sameOrigin(c.Request()) {
		return errs.E(errs.Forbidden, "websocket from another origin refused")
	}
	sb, err := s.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return err
	}
	if st, ok := s.engine.State(sess.ID); ok {
		sb.State = st
	}
	if sb.State != store.SandboxReady {
		return errs.E(errs.Conflict, msg(lang(c), "errwatchnotready", "name", ln.Name, "state", translate("wscl_"+sb.State, lang(c))))
	}
	node := c.Param("node")
	if !hasNode(sb.Nodes, node) {
		return errs.E(errs.NotFound, fmt.Sprintf("the cluster has no node %.40q", node))
	}
	// A client of the learner's shell of its own (on any replica), at the
	// learner's size, never resizing it; where the shell cannot be shared
	// (a node image without tmux), this replica's copy of the learner's.
	sh, err := s.watchShell(ctx, sb.Name, node, mode == "control")
	if err != nil {
		s.log.Info("watch through this replica's shell", "session", sess.ID, "node", node, "why", err)
		if sh, err = s.terms.shell(ctx, sess, sb.Name, node, 80, 24); err != nil {
			return errs.E(errs.NotFound, err.Error())
		}
	} else {
		defer sh.Close()
	}
	conn, err := s.terms.upgrader.Upgrade(c.Response(), c.Request(), nil)
	if err != nil {
		return nil
	}
	opts := terminal.WatchOptions{}
	var live *liveTakeover
	if mode == "control" {
		me := currentUser(c)
		rec := &store.Takeover{WorkshopID: w.ID, InstructorID: me.ID, Instructor: me.Name, LearnerID: id, Learner: ln.Name, LabSession: &sess.ID, Node: node, Replica: s.replica.ID}
		if err := s.store.StartTakeover(ctx, rec); err != nil {
			conn.Close()
			return nil
		}
		live = &liveTakeover{rec: rec, stop: make(chan struct{})}
		s.wsHub.addTakeover(sess.ID, live)
		s.engine.Publish(sess.ID, "takeover", map[string]any{"active": true, "instructor": me.Name, "since": rec.StartedAt})
		s.class.LearnerChanged(w.ID, id)
		s.log.Info("take-over started", "workshop", w.ID, "instructor", me.ID, "learner", id, "node", node)
		opts = terminal.WatchOptions{Control: true, Stop: live.stop, OnInput: func() { s.engine.Touch(sess.ID) }}
	}
	s.metrics.terminals.Inc()
	defer s.metrics.terminals.Dec()
	err = terminal.ServeWatch(conn, sh, node, terminal.DefaultLimits, opts)
	if live != nil {
		live.end("instructor") // no-op when the learner or the server ended it
		s.wsHub.removeTakeover(sess.ID, live)
		_ = s.store.EndTakeover(context.WithoutCancel(ctx), live.rec.ID, live.by)
		if s.wsHub.takeover(context.WithoutCancel(ctx), sess.ID) == nil {
			s.engine.Publish(sess.ID, "takeover", map[string]any{"active": false})
		}
		s.class.LearnerChanged(w.ID, id)
		s.log.Info("take-over ended", "workshop", w.ID, "learner", id, "by", live.by)
	}
	if err != nil {
		s.log.Info("watch terminal closed", "workshop", w.ID, "learner", id, "node", node, "reason", err)
	}
	return nil
}

func (s *Server) apiTakeovers(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	list, err := s.store.Takeovers(c.Request().Context(), w.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views(list, takeoverView))
}

// watchShell attaches an instructor to the learner's shell on a node as a
// client of its own, sized as the learner's window.
func (s *Server) watchShell(ctx context.Context, sbName, node string, control bool) (*terminal.Shell, error) {
	target := s.engine.Target(sbName)
	cols, rows, err := target.WindowSize(ctx, node)
	if err != nil {
		return nil, err
	}
	tty, err := target.Watch(ctx, node, control, cols, rows)
	if err != nil {
		return nil, err
	}
	sh := terminal.New(tty)
	sh.SetSize(cols, rows)
	return sh, nil
}
