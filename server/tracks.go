package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/progress"
	"github.com/podpath/podpath/store"
)

// TrackView is a track as the API shows it: its labs in order and, for a
// signed-in learner, their progress along it.
type TrackView struct {
	ID          string         `json:"id"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Labs        []TrackLabView `json:"labs"`
	// Completed counts the labs of the track the learner completed, of Total.
	Completed int `json:"completed"`
	Total     int `json:"total"`
	// Next is the first lab of the track the learner has not completed
	// (the first lab for someone signed out); empty once all are.
	Next string `json:"next"`
}

// TrackLabView is a lab of a track with the learner's progress in it.
type TrackLabView struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Completed: a session of the lab had every step passed or skipped.
	Completed bool `json:"completed"`
	// InProgress: not completed, with an active session or an attempt.
	InProgress bool `json:"inProgress"`
}

// labProgress is what a learner has done across all their sessions.
type labProgress struct {
	completed map[string]bool
	started   map[string]bool
}

// userProgress reads the progress of u (none when u is nil), by the same
// rule as team reports (progress.go).
func (s *Server) userProgress(ctx context.Context, u *store.User) (labProgress, error) {
	p := labProgress{completed: map[string]bool{}, started: map[string]bool{}}
	if u == nil {
		return p, nil
	}
	all, _, err := s.loadProgress(ctx, []int64{u.ID})
	if err != nil {
		return p, err
	}
	for id, lp := range all[u.ID] {
		p.completed[id] = lp.Status == progress.Completed
		p.started[id] = true
	}
	return p, nil
}

// trackView is t in language lg with progress p. Labs of the track this
// server does not have are left out.
func (s *Server) trackView(t *labs.Track, p labProgress, lg string) TrackView {
	v := TrackView{ID: t.ID, Title: t.Title.In(lg), Description: t.Description.In(lg), Labs: []TrackLabView{}}
	for _, id := range t.Labs {
		l := labs.Find(s.labs, id)
		if l == nil {
			continue
		}
		lv := TrackLabView{ID: l.ID, Title: l.Title.In(lg), Completed: p.completed[l.ID]}
		lv.InProgress = !lv.Completed && p.started[l.ID]
		if lv.Completed {
			v.Completed++
		} else if v.Next == "" {
			v.Next = l.ID
		}
		v.Labs = append(v.Labs, lv)
	}
	v.Total = len(v.Labs)
	return v
}

// trackViews are every track with the signed-in learner's progress.
func (s *Server) trackViews(c echo.Context) ([]TrackView, error) {
	out := make([]TrackView, 0, len(s.tracks))
	if len(s.tracks) == 0 {
		return out, nil
	}
	p, err := s.userProgress(c.Request().Context(), currentUser(c))
	if err != nil {
		return nil, err
	}
	lg := lang(c)
	for _, t := range s.tracks {
		out = append(out, s.trackView(t, p, lg))
	}
	return out, nil
}

func (s *Server) apiTracks(c echo.Context) error {
	out, err := s.trackViews(c)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, out)
}

func (s *Server) apiTrack(c echo.Context) error {
	t := labs.FindTrack(s.tracks, c.Param("track"))
	if t == nil {
		return errs.E(errs.NotFound, fmt.Sprintf("no track %.64q; GET /api/tracks lists them", c.Param("track")))
	}
	p, err := s.userProgress(c.Request().Context(), currentUser(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, s.trackView(t, p, lang(c)))
}
