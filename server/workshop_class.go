package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/store"
	"github.com/podpath/podpath/workshops"
)

// What an instructor does to a class and a learner in it: a raised hand, a
// take-over's end, a broadcast, more time, a reset, the end, the results.

type handRequest struct {
	Raised bool `json:"raised"`
}

func (s *Server) apiHand(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	if sess.WorkshopID == nil {
		return errs.E(errs.Conflict, translate("errhandnows", lang(c)))
	}
	var req handRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if err := s.store.SetHand(c.Request().Context(), *sess.WorkshopID, sess.UserID, req.Raised); err != nil {
		return err
	}
	s.engine.Publish(sess.ID, "hand", map[string]bool{"raised": req.Raised})
	s.class.LearnerChanged(*sess.WorkshopID, sess.UserID)
	return c.NoContent(http.StatusNoContent)
}

func (s *Server) apiEndTakeover(c echo.Context) error {
	sess, err := s.activeSession(c)
	if err != nil {
		return err
	}
	if !s.wsHub.endTakeovers(sess.ID, "learner") {
		return errs.E(errs.Conflict, translate("errnotakeover", lang(c)))
	}
	return c.NoContent(http.StatusNoContent)
}

// --- for the whole class ---

type broadcastRequest struct {
	Message string `json:"message"`
}

func (s *Server) apiBroadcast(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	var req broadcastRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	msg := strings.TrimSpace(req.Message)
	if utf8.RuneCountInString(msg) > 1000 {
		return errs.E(errs.Invalid, translate("errbroadcastlong", lang(c)))
	}
	ctx := c.Request().Context()
	if err := s.store.SetBroadcast(ctx, w.ID, msg); err != nil {
		return err
	}
	w, err = s.store.WorkshopByID(ctx, w.ID)
	if err != nil {
		return err
	}
	sessions, err := s.store.WorkshopSessions(ctx, w.ID)
	if err != nil {
		return err
	}
	data := map[string]any{"message": msg, "at": time.Now()}
	for _, sess := range sessions {
		if sess.State == store.SessionActive {
			s.engine.Publish(sess.ID, "broadcast", data)
		}
	}
	s.wsHub.publish(w.ID, "workshop", nil)
	return c.NoContent(http.StatusNoContent)
}

type extendRequest struct {
	Minutes int `json:"minutes"`
}

func (s *Server) apiExtendWorkshop(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	req := extendRequest{Minutes: 15}
	if c.Request().ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			return err
		}
	}
	if req.Minutes < 1 || req.Minutes > 24*60 {
		return errs.E(errs.Invalid, translate("errextendminutes", lang(c)))
	}
	n, err := s.store.ExtendWorkshopSessions(c.Request().Context(), w.ID, time.Duration(req.Minutes)*time.Minute)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ExtendedView{Extended: n})
}

type resetRequest struct {
	FromStep string `json:"fromStep"`
}

// apiResetLearner gives a learner a fresh cluster of the lab they are on
// (or were on last); the progress on steps before fromStep is kept.
func (s *Server) apiResetLearner(c echo.Context) error {
	w, id, err := s.staffLearner(c)
	if err != nil {
		return err
	}
	var req resetRequest
	if c.Request().ContentLength != 0 {
		if err := bindJSON(c, &req); err != nil {
			return err
		}
	}
	if _, err := s.class.Reset(c.Request().Context(), w, id, req.FromStep); err != nil {
		return err
	}
	row, err := s.oneLearnerRow(c, w, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, row)
}

func (s *Server) apiEndWorkshop(c echo.Context) error {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return err
	}
	if err := s.class.End(c.Request().Context(), w, "the instructor ended the workshop"); errors.Is(err, workshops.ErrNotEnded) {
		s.log.Error("end workshop: nothing was stored", "workshop", w.ID, "err", err)
		return errs.E(errs.Unavailable, translate("errendfailed", lang(c)))
	} else if err != nil {
		return err
	}
	w, err = s.store.WorkshopByID(c.Request().Context(), w.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.workshopView(c, w, true))
}

// --- results ---

// ResultRow is one learner's result on one step.
type ResultRow struct {
	Learner           string     `json:"learner"`
	LearnerID         int64      `json:"learnerId"`
	Guest             bool       `json:"guest"`
	Lab               string     `json:"lab"`
	Step              string     `json:"step"`
	StepTitle         string     `json:"stepTitle"`
	Status            string     `json:"status"`
	Passed            bool       `json:"passed"`
	Attempts          int        `json:"attempts"`
	FailedAttempts    int        `json:"failedAttempts"`
	TimeToPassSeconds *int       `json:"timeToPassSeconds"`
	Skipped           bool       `json:"skipped"`
	Hints             int        `json:"hints"`
	At                *time.Time `json:"at"`
}

func (s *Server) results(c echo.Context) (*store.Workshop, []ResultRow, error) {
	w, err := s.staffWorkshop(c)
	if err != nil {
		return nil, nil, err
	}
	b, err := s.board(c, w)
	if err != nil {
		return nil, nil, err
	}
	var out []ResultRow
	for _, ln := range b.Learners {
		for _, st := range b.Steps {
			cell := ln.Cells[st.Key]
			if cell == nil {
				continue
			}
			out = append(out, ResultRow{Learner: ln.Name, LearnerID: ln.ID, Guest: ln.Guest, Lab: st.Lab, Step: st.Step, StepTitle: st.Title,
				Status: cell.Status, Passed: cell.Status == store.StepPassed, Attempts: cell.Attempts, FailedAttempts: cell.Failed,
				TimeToPassSeconds: cell.TimeToPassSeconds, Skipped: cell.Status == store.StepSkipped, Hints: cell.Hints, At: cell.At})
		}
	}
	return w, out, nil
}

func (s *Server) apiResultsJSON(c echo.Context) error {
	w, rows, err := s.results(c)
	if err != nil {
		return err
	}
	if rows == nil {
		rows = []ResultRow{}
	}
	c.Response().Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="workshop-%d-results.json"`, w.ID))
	return c.JSON(http.StatusOK, ResultsView{Workshop: WorkshopRef{ID: w.ID, Title: w.Title}, Results: rows})
}
