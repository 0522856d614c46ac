package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/internal/names"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/session"
	"github.com/podpath/podpath/store"
)

// A learner's lab session through the API: its view, a step, Check,
// Solve, more time, retry, end and its event stream.

// SessionView is a lab session as the API shows it.
type SessionView struct {
	ID             string    `json:"id"`
	LabID          string    `json:"labId"`
	LabTitle       string    `json:"labTitle"`
	Mode           string    `json:"mode"`
	State          string    `json:"state"`
	EndReason      *string   `json:"endReason,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	LastActivityAt time.Time `json:"lastActivityAt"`
	ExpiresAt      time.Time `json:"expiresAt"`
	IdleDeadline   time.Time `json:"idleDeadline"`
	Deadline       time.Time `json:"deadline"`
	// EndsAt is when the session ends whatever the learner does, and
	// EndsBy why: "lifetime" (its hard lifetime, which Extend moves) or
	// "class" (its workshop's end). The countdown shows this; the idle
	// deadline only warns, near its end.
	EndsAt             time.Time    `json:"endsAt"`
	EndsBy             string       `json:"endsBy"`
	IdleTimeoutSeconds int          `json:"idleTimeoutSeconds,omitempty"`
	Extensions         int          `json:"extensions"`
	MaxExtensions      int          `json:"maxExtensions"`
	WarnBeforeSecond   int          `json:"warnBeforeSeconds"`
	Sandbox            SandboxView  `json:"sandbox"`
	Steps              []StepStatus `json:"steps"`
	CurrentStep        string       `json:"currentStep"`
	// Summary is set once every step is passed or skipped.
	Summary *SummaryView `json:"summary,omitempty"`
	// Workshop is set for a session of a workshop.
	Workshop *SessionWorkshop `json:"workshop,omitempty"`
}

// SandboxView is a session's cluster.
type SandboxView struct {
	Name          string         `json:"name"`
	State         string         `json:"state"`
	Error         *string        `json:"error,omitempty"`
	Progress      []ProgressView `json:"progress"`
	Nodes         []NodeView     `json:"nodes"`
	QueuePosition int            `json:"queuePosition,omitempty"`
}

// StepStatus is a step with its status for this session.
type StepStatus struct {
	StepBase
	Status      string `json:"status"`
	Attempts    int    `json:"attempts"`
	NeedsAnswer bool   `json:"needsAnswer,omitempty"`
	AnswerLabel string `json:"answerLabel,omitempty"`
	NoSkip      bool   `json:"noSkip,omitempty"`
}

// stepStatus is a step with its status for this session (pending when it
// has no attempt yet). In challenge mode a step's layers are where the
// fault is, so they are shown only once the step is passed or skipped: the
// path diagram lights up after the diagnosis, not before it.
func stepStatus(st *labs.Step, status store.StepStatus, lg, mode string) StepStatus {
	ss := StepStatus{StepBase: StepBase{ID: st.ID, Title: st.Title.In(lg), Layers: st.Layers},
		Status: status.Status, Attempts: status.Attempts, NeedsAnswer: st.NeedsAnswer(), NoSkip: st.NoSkip}
	if ss.Status == "" {
		ss.Status = store.StepPending
	}
	if mode == store.ModeChallenge && ss.Status != store.StepPassed && ss.Status != store.StepSkipped {
		ss.Layers = []string{}
	}
	if ss.NeedsAnswer {
		ss.AnswerLabel = st.Answer.In(lg)
	}
	return ss
}

func (s *Server) sessionView(c echo.Context, sess *store.LabSession) (*SessionView, error) {
	ctx := c.Request().Context()
	lg := lang(c)
	v := &SessionView{
		ID: sess.ID.String(), LabID: sess.LabID, Mode: sess.Mode, State: sess.State, EndReason: sess.EndReason,
		CreatedAt: sess.CreatedAt, LastActivityAt: sess.LastActivityAt, ExpiresAt: sess.ExpiresAt,
		Extensions: sess.Extensions, MaxExtensions: s.cfg.MaxExtensions, WarnBeforeSecond: int(s.cfg.WarnBefore.Seconds()),
		Workshop: s.sessionWorkshop(ctx, sess),
	}
	// The idle deadline from the latest activity the engine saw (keys
	// reach Postgres only every few seconds), so a reload does not jump.
	fresh := *sess
	fresh.LastActivityAt = s.engine.LastActivity(sess)
	v.LastActivityAt = fresh.LastActivityAt
	v.IdleDeadline, v.Deadline = fresh.IdleDeadline(s.cfg.IdleTimeout), fresh.Deadline(s.cfg.IdleTimeout)
	v.EndsAt, v.EndsBy = sess.ExpiresAt, "lifetime"
	if sess.WorkshopID == nil {
		v.IdleTimeoutSeconds = int(s.cfg.IdleTimeout.Seconds())
	} else if w, err := s.store.WorkshopByID(ctx, *sess.WorkshopID); err == nil && !w.EndsAt.After(v.EndsAt) {
		// A workshop's session ends with the class (its lifetime has a
		// few minutes' margin for a server that was down then).
		v.EndsAt, v.EndsBy = w.EndsAt, "class"
	}
	sb, err := s.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	v.Sandbox = SandboxView{Name: sb.Name, State: sb.State, Error: sb.Error, Progress: progressViews(sb.Progress, lg), Nodes: nodeViews(sb.Nodes),
		QueuePosition: s.engine.QueuePosition(sb.Name)}
	if st, ok := s.engine.State(sess.ID); ok && sess.State == store.SessionActive {
		v.Sandbox.State = st // fresher than Postgres while a write is pending
	}
	statuses, err := s.store.StepStatuses(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	l := s.engine.SessionLab(sess)
	if l == nil {
		v.LabTitle = sess.LabID
		return v, nil
	}
	v.LabTitle = l.Title.In(lg)
	for i := range l.Steps {
		v.Steps = append(v.Steps, stepStatus(&l.Steps[i], statuses[l.Steps[i].ID], lg, sess.Mode))
	}
	steps := progress.FromStatuses(statuses)
	if cur := progress.Current(l, steps); cur != nil {
		v.CurrentStep = cur.ID
	}
	v.Summary = labSummary(l, s.labs, steps, sess.CreatedAt, lg)
	if md := l.Finish.In(lg); v.Summary != nil && md != "" {
		if v.Summary.FinishHTML, err = s.renderStep(ctx, sess, l, md, lg); err != nil {
			return nil, err
		}
	}
	if v.Summary != nil && v.Workshop != nil {
		// A workshop's lab leads to the workshop's next lab, not the catalog's.
		v.Summary.Next = nil
		if next := s.workshopNext(v.Workshop, l); next != nil {
			v.Summary.Next = nextLabView(next, lg)
		}
	}
	return v, nil
}

func (s *Server) apiSessions(c echo.Context) error {
	list, err := s.store.UserLabSessions(c.Request().Context(), currentUser(c).ID, 50)
	if err != nil {
		return err
	}
	out := make([]*SessionView, 0, len(list))
	for _, sess := range list {
		v, err := s.sessionView(c, sess)
		if err != nil {
			return err
		}
		out = append(out, v)
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiSession(c echo.Context) error {
	sess, err := s.ownSession(c)
	if err != nil {
		return err
	}
	v, err := s.sessionView(c, sess)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// StepView is a step's text and status.
type StepView struct {
	StepStatus
	HTML        string       `json:"html"`
	LastAttempt *AttemptView `json:"lastAttempt,omitempty"`
}

func (s *Server) apiStep(c echo.Context) error {
	sess, err := s.ownSession(c)
	if err != nil {
		return err
	}
	v, err := s.stepView(c, sess, c.Param("step"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

func (s *Server) stepView(c echo.Context, sess *store.LabSession, stepID string) (*StepView, error) {
	ctx := c.Request().Context()
	lg := lang(c)
	// The session's lab, filled with its values: the catalog's has none,
	// and a step that names one would not render.
	l := s.engine.SessionLab(sess)
	if l == nil {
		return nil, errs.E(errs.Gone, msg(lg, "errlabgone", "lab", sess.LabID))
	}
	step := l.Step(stepID)
	if step == nil {
		return nil, errs.E(errs.NotFound, msg(lg, "errnostep", "lab", l.ID, "step", fmt.Sprintf("%q", stepID)))
	}
	html, err := s.renderStep(ctx, sess, l, step.Body.In(lg), lg)
	if err != nil {
		return nil, err
	}
	statuses, err := s.store.StepStatuses(ctx, sess.ID)
	if err != nil {
		return nil, err
	}
	v := &StepView{StepStatus: stepStatus(step, statuses[step.ID], lg, sess.Mode), HTML: html}
	if a, err := s.store.LastAttempt(ctx, sess.ID, step.ID); err == nil {
		v.LastAttempt = attemptView(a, lg)
	} else if !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	return v, nil
}

// templateData is what step text may refer to: the learner's real cluster.
func (s *Server) templateData(sbName string, l *labs.Lab) labs.TemplateData {
	d := labs.SampleData(l)
	d.Cluster = sbName
	d.Images = labs.Images{Nginx: names.NginxImage, Tools: names.ToolsImage}
	d.Values = l.Vals
	return d
}

type checkRequest struct {
	Answer *string `json:"answer,omitempty"`
}

func (s *Server) apiCheck(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	var req checkRequest
	if c.Request().ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			return err
		}
	}
	answer := ""
	if req.Answer != nil {
		answer = strings.TrimSpace(*req.Answer)
		if len(answer) > 2000 {
			return errs.E(errs.Invalid, translate("erranswerlong", lang(c)))
		}
	}
	a, err := s.engine.Attempt(c.Request().Context(), sess, c.Param("step"), answer, false)
	if err != nil {
		return err
	}
	if sess.WorkshopID != nil {
		s.class.LearnerChanged(*sess.WorkshopID, sess.UserID)
	}
	return c.JSON(http.StatusOK, attemptView(a, lang(c)))
}

func (s *Server) apiSolve(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	a, err := s.engine.Attempt(c.Request().Context(), sess, c.Param("step"), "", true)
	if err != nil {
		return err
	}
	if sess.WorkshopID != nil {
		s.class.LearnerChanged(*sess.WorkshopID, sess.UserID)
	}
	return c.JSON(http.StatusOK, attemptView(a, lang(c)))
}

func (s *Server) apiExtend(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	if sess.WorkshopID != nil {
		return errs.E(errs.Conflict, "a workshop's session ends with the class: its instructor can give everyone more time")
	}
	ext, err := s.store.ExtendLabSession(c.Request().Context(), sess.ID, s.cfg.Extension, s.cfg.MaxExtensions)
	if errors.Is(err, store.ErrNotFound) {
		return errs.E(errs.Conflict, plural(lang(c), "errextended", s.cfg.MaxExtensions))
	}
	if err != nil {
		return err
	}
	_ = s.engine.Wake(c.Request().Context(), ext)
	v, err := s.sessionView(c, ext)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// apiTouch records that the learner is here (the lab page, while they
// read or click), and wakes a hibernated cluster: what keys in the
// terminal do, for a learner who is reading.
func (s *Server) apiTouch(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	s.engine.Touch(sess.ID)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiRetry(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	if err := s.engine.Retry(c.Request().Context(), sess); err != nil {
		return err
	}
	v, err := s.sessionView(c, sess)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, v)
}

func (s *Server) apiEnd(c echo.Context) error {
	sess, err := s.ownSession(c)
	if err != nil {
		return err
	}
	if sess.State == store.SessionActive {
		if err := s.engine.End(c.Request().Context(), sess, "ended by the learner"); err != nil {
			return err
		}
	}
	return c.NoContent(http.StatusNoContent)
}

// eventStream answers with a server-sent event stream and returns its
// writer: an event of a type with its data as JSON, or (type "") a
// keepalive comment. deadline moves the write deadline before each.
func eventStream(c echo.Context, deadline func()) func(typ string, data any) error {
	w := c.Response()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return func(typ string, data any) error {
		var msg string
		if typ == "" {
			msg = ": keepalive\n\n"
		} else {
			b, err := json.Marshal(data)
			if err != nil {
				return err
			}
			msg = fmt.Sprintf("event: %s\ndata: %s\n\n", typ, b)
		}
		deadline()
		if _, err := io.WriteString(w, msg); err != nil {
			return err
		}
		w.Flush()
		return nil
	}
}

// apiEvents streams the session's events as server-sent events. The first
// event is the whole session, so a client needs nothing else to start.
func (s *Server) apiEvents(c echo.Context) error {
	sess, err := s.ownSession(c)
	if err != nil {
		return err
	}
	release, err := s.streams.acquire(currentUser(c).ID)
	if err != nil {
		return err
	}
	defer release()
	deadline := streamDeadlines(c)
	events, cancel := s.engine.Subscribe(sess.ID)
	defer cancel()
	view, err := s.sessionView(c, sess)
	if err != nil {
		return err
	}
	write := eventStream(c, deadline)
	if err := write("session", view); err != nil {
		return nil
	}
	keepalive := time.NewTicker(20 * time.Second)
	defer keepalive.Stop()
	for {
		select {
		case <-c.Request().Context().Done():
			return nil
		case <-s.closing:
			return nil // the server is shutting down
		case e, ok := <-events:
			if !ok {
				return nil // the server is shutting down
			}
			if e.Type == session.EventResync {
				// Events may have been lost between replicas: the whole
				// session again.
				fresh, err := s.store.LabSession(c.Request().Context(), sess.ID)
				if err != nil {
					return nil
				}
				if view, err = s.sessionView(c, fresh); err != nil || write("session", view) != nil {
					return nil
				}
				continue
			}
			e = eventView(e, lang(c))
			if err := write(e.Type, e.Data); err != nil {
				return nil
			}
		case <-keepalive.C:
			if err := write("", nil); err != nil {
				return nil
			}
		}
	}
}
