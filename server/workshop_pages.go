package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/store"
)

// The workshop pages are shells: the handlers check who asks and that the
// ids are numbers, and the page's script (web/static/js) loads the rest from
// the API, which also says when a workshop does not exist or is not the
// instructor's. See /api/workshops in docs/API.md.

// workshopPageRoutes registers the instructor's pages.
func (s *Server) workshopPageRoutes(e *echo.Echo) {
	e.GET("/workshops", s.pageWorkshops, s.requireUserPage, s.requireInstructorPage)
	e.GET("/workshops/:id", s.pageWorkshop, s.requireUserPage, s.requireInstructorPage)
	e.GET("/workshops/:id/learners/:learner", s.pageWatch, s.requireUserPage, s.requireInstructorPage)
	e.GET("/workshops/:id/takeovers", s.pageTakeovers, s.requireUserPage, s.requireInstructorPage)
}

// requireInstructorPage lets instructors and admins through; anyone else
// gets the error page, which says how an account becomes an instructor's.
func (s *Server) requireInstructorPage(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := currentUser(c); u == nil || (u.Role != store.RoleInstructor && u.Role != store.RoleAdmin) {
			return s.workshopPageError(c, http.StatusForbidden, "wsneedinstructor")
		}
		return next(c)
	}
}

func (s *Server) workshopPageError(c echo.Context, status int, key string) error {
	return s.pages.render(c, status, "error", s.pageData(c, map[string]any{"Status": status, "Message": translate(key, lang(c))}))
}

// pageID reads a positive whole number from the path.
func pageID(c echo.Context, name string) (int64, bool) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	return id, err == nil && id > 0
}

// workshopTexts are the page's words for its script: every workshop word,
// and the lab page's words the scripts share.
func workshopTexts(lg string) map[string]string {
	out := map[string]string{}
	for key := range messages["en"] {
		// An English singular ("_one") only where the language has it.
		if _, own := messages[lg][key]; strings.HasPrefix(key, "ws") && (own || !strings.HasSuffix(key, "_one")) {
			out[key] = translate(key, lg)
		}
	}
	for _, key := range []string{"passed", "failedcheck", "skipped", "pending", "observed", "copy", "copied",
		"connecting", "reconnect", "hours", "mins", "secs", "error"} {
		out[key] = translate(key, lg)
	}
	return out
}

func (s *Server) pageWorkshops(c echo.Context) error {
	return s.pages.render(c, http.StatusOK, "workshops", s.pageData(c, map[string]any{"Texts": workshopTexts(lang(c))}))
}

func (s *Server) pageWorkshop(c echo.Context) error {
	id, ok := pageID(c, "id")
	if !ok {
		return s.workshopPageError(c, http.StatusNotFound, "wsnotfound")
	}
	return s.pages.render(c, http.StatusOK, "workshop", s.pageData(c, map[string]any{
		"WorkshopID": id, "Texts": workshopTexts(lang(c)),
	}))
}

// takeoverRow is one take-over on the take-over log page.
type takeoverRow struct {
	Instructor, Learner, Node string
	Started, Ended, Lasted    string
	EndedBy                   string // a message key: wstoby_instructor, _learner, _server
}

// pageTakeovers is the workshop's take-over log: who typed in whose
// terminal, when, how long, and who ended it (the same records as GET
// /api/workshops/{id}/takeovers), newest first.
func (s *Server) pageTakeovers(c echo.Context) error {
	id, ok := pageID(c, "id")
	if !ok {
		return s.workshopPageError(c, http.StatusNotFound, "wsnotfound")
	}
	ctx := c.Request().Context()
	w, err := s.store.WorkshopByID(ctx, id)
	if u := currentUser(c); errors.Is(err, store.ErrNotFound) || (err == nil && u.Role != store.RoleAdmin && w.InstructorID != u.ID) {
		return s.workshopPageError(c, http.StatusNotFound, "wsnotfound")
	}
	if err != nil {
		return err
	}
	list, err := s.store.Takeovers(ctx, w.ID)
	if err != nil {
		return err
	}
	lg := lang(c)
	rows := make([]takeoverRow, 0, len(list))
	for _, t := range list {
		r := takeoverRow{Instructor: t.Instructor, Learner: t.Learner, Node: t.Node, Started: dateCell(t.StartedAt),
			Ended: dateCell(t.EndedAt), Lasted: durationText(t.Seconds, lg)}
		if t.EndedBy != nil {
			r.EndedBy = "wstoby_" + *t.EndedBy
		}
		rows = append(rows, r)
	}
	return s.pages.render(c, http.StatusOK, "takeovers", s.pageData(c, map[string]any{"Workshop": w, "Takeovers": rows}))
}

// durationText says a number of seconds in the language: 42 s, 5 min 3 s,
// 1 h 5 min.
func durationText(sec int, lg string) string {
	h, m, s := sec/3600, sec%3600/60, sec%60
	switch {
	case h > 0:
		return fmt.Sprintf("%d %s %d %s", h, translate("hours", lg), m, translate("mins", lg))
	case m > 0:
		return fmt.Sprintf("%d %s %d %s", m, translate("mins", lg), s, translate("secs", lg))
	}
	return fmt.Sprintf("%d %s", s, translate("secs", lg))
}

func (s *Server) pageWatch(c echo.Context) error {
	id, ok := pageID(c, "id")
	if !ok {
		return s.workshopPageError(c, http.StatusNotFound, "wsnotfound")
	}
	learner, ok := pageID(c, "learner")
	if !ok {
		return s.workshopPageError(c, http.StatusNotFound, "wsnolearner")
	}
	return s.pages.render(c, http.StatusOK, "watch", s.pageData(c, map[string]any{
		"WorkshopID": id, "LearnerID": learner, "Texts": workshopTexts(lang(c)),
	}))
}
