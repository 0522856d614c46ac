package server

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/workshops"
)

func init() {
	pageNames = append(pageNames, "join")
	addMessages("join pages", joinMessages)
}

var joinMessages = map[string]map[string]string{
	"en": {
		"joinws":           "Join a workshop",
		"joinby":           "with",
		"joinname":         "Your name, as the instructor will see it",
		"joinbtn":          "Join",
		"joinguest":        "You join as a guest: no account, your progress stays in this browser.",
		"joinneedsaccount": "This workshop needs an account.",
		"joincode":         "Join code",
		"joinedas":         "You are in this workshop as {name}.",
		"joincontinue":     "Continue",
	},
	"zh": {
		"joinws":           "加入工作坊",
		"joinby":           "讲师",
		"joinname":         "你的名字（讲师会看到它）",
		"joinbtn":          "加入",
		"joinguest":        "你将以访客身份加入：无需账号，进度保存在这个浏览器里。",
		"joinneedsaccount": "这个工作坊需要账号。",
		"joincode":         "加入码",
		"joinedas":         "你已经以“{name}”的名字加入了这个工作坊。",
		"joincontinue":     "继续",
	},
}

// pageJoinForm is /join: the code typed on the home page, or a form for it.
func (s *Server) pageJoinForm(c echo.Context) error {
	if code := workshops.NormalizeCode(c.QueryParam("code")); code != "" && len(code) <= 20 {
		return c.Redirect(http.StatusSeeOther, "/join/"+url.PathEscape(workshops.DisplayCode(code)))
	}
	return s.pages.render(c, http.StatusOK, "join", s.pageData(c, map[string]any{"FormCSRF": s.formCSRF(c)}))
}

// renderJoin shows the join page of a code, with err's message and status
// when the join cannot be (or was not) made.
func (s *Server) renderJoin(c echo.Context, code string, joinErr error) error {
	data := map[string]any{"Code": workshops.DisplayCode(code), "FormCSRF": s.formCSRF(c)}
	status := http.StatusOK
	if k := errs.KindOf(joinErr); joinErr != nil && (k == errs.NotFound || k == errs.TooMany) {
		// The code itself was refused: looking it up again would count
		// the same wrong code twice.
	} else if w, err := s.workshopForJoin(c, code); err != nil {
		joinErr = err
	} else {
		data["Workshop"] = s.workshopView(c, w, false)
		// Joining again keeps the seat and the name given the first time:
		// the page says the name instead of asking for one it would ignore.
		if u := currentUser(c); u != nil {
			if ln, err := s.store.WorkshopLearner(c.Request().Context(), w.ID, u.ID); err == nil {
				data["Seated"] = ln.Name
			}
		}
	}
	if joinErr != nil {
		st, message, _, ok := refusal(joinErr, lang(c))
		if !ok {
			return joinErr
		}
		data["Error"], status = message, st
	}
	return s.pages.render(c, status, "join", s.pageData(c, data))
}

func (s *Server) pageJoin(c echo.Context) error {
	return s.renderJoin(c, workshops.NormalizeCode(c.Param("code")), nil)
}

func (s *Server) formJoin(c echo.Context) error {
	code := workshops.NormalizeCode(c.Param("code"))
	if currentWebSession(c) != nil {
		if err := checkFormCSRF(c); err != nil {
			return err
		}
	} else if err := checkPreSessionCSRF(c); err != nil {
		return err
	}
	j, err := s.join(c, code, c.FormValue("name"))
	if j != nil && j.Guest {
		if _, serr := s.startWebSession(c, j.User); serr != nil {
			return serr
		}
	}
	if err != nil {
		return s.renderJoin(c, code, err)
	}
	return c.Redirect(http.StatusSeeOther, "/sessions/"+j.Session.ID.String())
}
