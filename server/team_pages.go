package server

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/store"
)

func init() {
	pageNames = append(pageNames, "invite", "team", "history")
	addMessages("team pages", teamMessages)
}

var teamMessages = map[string]map[string]string{
	"en": {
		"invjoin":      "Join the team",
		"invjoinbtn":   "Join team",
		"invsignin":    "Sign in to join this team.",
		"invinvalid":   "This invite link is not valid. Ask your team lead for a new one.",
		"invexpired":   "This invite link has expired. Ask your team lead for a new one.",
		"invusedup":    "This invite link has been used as often as it may be. Ask your team lead for a new one.",
		"invdomain":    "This invite link is for another e-mail domain: sign in with your work account, or ask your team lead.",
		"invguest":     "A workshop guest cannot join a team. Sign in with an account first.",
		"invjoined":    "You are in the team",
		"assigned":     "Assigned to you",
		"due":          "due",
		"overdue":      "overdue",
		"done":         "done",
		"labsdone":     "labs done",
		"continue":     "Continue",
		"teamreport":   "Team report",
		"member":       "Member",
		"notstarted":   "not started",
		"inprogress":   "in progress",
		"completed":    "completed",
		"attempts":     "attempts",
		"skips":        "skipped",
		"history":      "My history",
		"historynone":  "No lab sessions yet.",
		"started":      "Started",
		"histended":    "Ended",
		"stepsdone":    "Steps done",
		"timespent":    "time",
		"exportcsv":    "Export CSV",
		"exportjson":   "Export JSON",
		"nomembers":    "No members yet.",
		"noassignment": "Nothing assigned yet.",
		"teams":        "Teams",
		"teamneedlead": "Only the team's leads and admins can see its report.",
		"noteam":       "There is no such team.",
		"track":        "Track",
		"lab":          "Lab",
		"assign":       "Assign",
		"assignwhat":   "Track or lab",
		"duedate":      "Due date",
		"remove":       "Remove",
		"invites":      "Invite links",
		"newinvite":    "Make an invite link",
		"invhours":     "Valid for (hours)",
		"invuses":      "Uses",
		"invdomain2":   "Only e-mail domain (optional)",
		"invlink":      "The link, shown this once: copy it now",
		"revoke":       "Revoke",
		"revoked":      "revoked",
		"expires":      "expires",
		"uses":         "uses",
		"assignments":  "Assignments",
	},
	"zh": {
		"invjoin":      "加入团队",
		"invjoinbtn":   "加入团队",
		"invsignin":    "登录后即可加入这个团队。",
		"invinvalid":   "这个邀请链接无效。请向团队负责人要一个新的。",
		"invexpired":   "这个邀请链接已过期。请向团队负责人要一个新的。",
		"invusedup":    "这个邀请链接的使用次数已满。请向团队负责人要一个新的。",
		"invdomain":    "这个邀请链接只接受另一个邮箱域名：请用工作账号登录，或联系团队负责人。",
		"invguest":     "工作坊访客不能加入团队。请先用账号登录。",
		"invjoined":    "你已加入团队",
		"assigned":     "分配给你的",
		"due":          "截止",
		"overdue":      "已逾期",
		"done":         "已完成",
		"labsdone":     "个实验已完成",
		"continue":     "继续",
		"teamreport":   "团队报告",
		"member":       "成员",
		"notstarted":   "未开始",
		"inprogress":   "进行中",
		"completed":    "已完成",
		"attempts":     "次检查",
		"skips":        "跳过",
		"history":      "我的记录",
		"historynone":  "还没有实验会话。",
		"started":      "开始",
		"histended":    "结束",
		"stepsdone":    "完成的步骤",
		"timespent":    "用时",
		"exportcsv":    "导出 CSV",
		"exportjson":   "导出 JSON",
		"nomembers":    "还没有成员。",
		"noassignment": "还没有分配任何内容。",
		"teams":        "团队",
		"teamneedlead": "只有团队负责人和管理员能查看团队报告。",
		"noteam":       "没有这个团队。",
		"track":        "学习路线",
		"lab":          "实验",
		"assign":       "分配",
		"assignwhat":   "路径或实验",
		"duedate":      "截止日期",
		"remove":       "移除",
		"invites":      "邀请链接",
		"newinvite":    "生成邀请链接",
		"invhours":     "有效时长（小时）",
		"invuses":      "可用次数",
		"invdomain2":   "仅限邮箱域名（可选）",
		"invlink":      "链接只显示这一次：请现在复制",
		"revoke":       "作废",
		"revoked":      "已作废",
		"expires":      "到期",
		"uses":         "次使用",
		"assignments":  "分配的内容",
	},
}

func (s *Server) teamPageRoutes(e *echo.Echo) {
	e.GET("/invite/:token", s.pageInvite)
	e.POST("/invite/:token", s.formJoinTeam, s.requireUserPage)
	e.GET("/teams/:id", s.pageTeam, s.requireUserPage)
	e.POST("/teams/:id/assign", s.formAssign, s.requireUserPage)
	e.POST("/teams/:id/assignments/:assignment/remove", s.formUnassign, s.requireUserPage)
	e.POST("/teams/:id/invite", s.formInvite, s.requireUserPage)
	e.POST("/teams/:id/invites/:invite/revoke", s.formRevokeInvite, s.requireUserPage)
	e.GET("/history", s.pageHistory, s.requireUserPage)
}

// pageInvite shows an invite link: a button to join, or sign-in first.
// A link that is not valid, has expired or is used up says so and names
// no team.
func (s *Server) pageInvite(c echo.Context) error {
	token := c.Param("token")
	data := map[string]any{"Token": token}
	inv, err := s.store.InviteByToken(c.Request().Context(), token)
	switch {
	case err != nil || inv.RevokedAt != nil:
		return s.pages.render(c, http.StatusNotFound, "invite", s.pageData(c, map[string]any{"Error": translate("invinvalid", lang(c))}))
	case !time.Now().Before(inv.ExpiresAt):
		return s.pages.render(c, http.StatusGone, "invite", s.pageData(c, map[string]any{"Error": translate("invexpired", lang(c))}))
	case inv.Uses >= inv.MaxUses:
		return s.pages.render(c, http.StatusGone, "invite", s.pageData(c, map[string]any{"Error": translate("invusedup", lang(c))}))
	}
	if t, err := s.store.TeamByID(c.Request().Context(), inv.TeamID); err == nil {
		data["Team"] = t
	}
	return s.pages.render(c, http.StatusOK, "invite", s.pageData(c, data))
}

func (s *Server) formJoinTeam(c echo.Context) error {
	if err := checkFormCSRF(c); err != nil {
		return err
	}
	_, err := s.acceptInvite(c.Request().Context(), c.Param("token"), currentUser(c))
	if e, ok := errs.As(err); ok && e.Key != "" {
		return s.pages.render(c, statusOfKind(e.Kind), "invite", s.pageData(c, map[string]any{"Error": localize(e, lang(c))}))
	}
	if err != nil {
		return err
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

func (s *Server) pageTeam(c echo.Context) error {
	return s.renderTeam(c, http.StatusOK, nil)
}

// assignOption is a track or lab a lead can assign from the team page.
type assignOption struct{ Value, Label string }

// renderTeam is the team page: the report, and the lead's controls
// (assign, invite) with extra's message or new invite link.
func (s *Server) renderTeam(c echo.Context, status int, extra map[string]any) error {
	r, err := s.teamReport(c)
	if err != nil {
		if e, ok := err.(*errs.Error); ok && e.Kind != errs.Internal {
			key := "teamneedlead"
			if e.Kind != errs.Forbidden {
				key = "noteam"
			}
			status := statusOfKind(e.Kind)
			return s.pages.render(c, status, "error", s.pageData(c, map[string]any{"Status": status, "Message": translate(key, lang(c))}))
		}
		return err
	}
	lg := lang(c)
	invites, err := s.store.Invites(c.Request().Context(), r.Team.ID)
	if err != nil {
		return err
	}
	var opts []assignOption
	for _, t := range s.tracks {
		opts = append(opts, assignOption{Value: store.AssignTrack + ":" + t.ID, Label: translate("track", lg) + ": " + t.Title.In(lg)})
	}
	for _, l := range s.labs {
		opts = append(opts, assignOption{Value: store.AssignLab + ":" + l.ID, Label: translate("lab", lg) + ": " + l.Title.In(lg)})
	}
	d := map[string]any{"Report": r, "Invites": invites, "Options": opts, "Now": time.Now(),
		"DefaultDue": time.Now().Add(14 * 24 * time.Hour).UTC().Format("2006-01-02")}
	for k, v := range extra {
		d[k] = v
	}
	return s.pages.render(c, status, "team", s.pageData(c, d))
}

// teamForm runs a lead's form on the team page: fn's API error is shown on
// the page, success goes back to it (or shows what fn returns).
func (s *Server) teamForm(c echo.Context, fn func(t *store.Team) (map[string]any, error)) error {
	if err := checkFormCSRF(c); err != nil {
		return err
	}
	t, err := s.teamFor(c)
	if err != nil {
		return s.renderTeam(c, http.StatusOK, nil) // renders the refusal page
	}
	extra, err := fn(t)
	if err != nil {
		if status, m, _, ok := refusal(err, lang(c)); ok {
			return s.renderTeam(c, status, map[string]any{"Error": m})
		}
		return err
	}
	if extra != nil {
		return s.renderTeam(c, http.StatusOK, extra)
	}
	return c.Redirect(http.StatusSeeOther, "/teams/"+strconv.FormatInt(t.ID, 10))
}

func (s *Server) formAssign(c echo.Context) error {
	return s.teamForm(c, func(t *store.Team) (map[string]any, error) {
		kind, ref, _ := strings.Cut(c.FormValue("ref"), ":")
		_, err := s.assign(c, t, assignRequest{Kind: kind, Ref: ref, DueAt: c.FormValue("due")})
		return nil, err
	})
}

func (s *Server) formUnassign(c echo.Context) error {
	return s.teamForm(c, func(t *store.Team) (map[string]any, error) {
		id, err := pathID(c, "assignment", "assignment")
		if err != nil {
			return nil, err
		}
		if err := s.store.Unassign(c.Request().Context(), t.ID, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, nil
	})
}

func (s *Server) formInvite(c echo.Context) error {
	return s.teamForm(c, func(t *store.Team) (map[string]any, error) {
		hours, _ := strconv.Atoi(c.FormValue("hours"))
		uses, _ := strconv.Atoi(c.FormValue("uses"))
		if c.FormValue("hours") != "" && hours == 0 || c.FormValue("uses") != "" && uses == 0 {
			return nil, errs.E(errs.Invalid, "write the hours and uses as whole numbers above 0")
		}
		inv, err := s.createInvite(c, t, inviteRequest{ExpiresInHours: hours, MaxUses: uses, AllowedDomain: c.FormValue("domain")})
		if err != nil {
			return nil, err
		}
		return map[string]any{"NewInvite": inv}, nil
	})
}

func (s *Server) formRevokeInvite(c echo.Context) error {
	return s.teamForm(c, func(t *store.Team) (map[string]any, error) {
		id, err := pathID(c, "invite", "invite")
		if err != nil {
			return nil, err
		}
		if err := s.store.RevokeInvite(c.Request().Context(), t.ID, id); err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		return nil, nil
	})
}

func (s *Server) pageHistory(c echo.Context) error {
	h, err := s.history(c, currentUser(c))
	if err != nil {
		return err
	}
	return s.pages.render(c, http.StatusOK, "history", s.pageData(c, map[string]any{"History": h}))
}

// homeTeams is what the home page shows of teams: assignments and the
// teams the user leads.
func (s *Server) homeTeams(c echo.Context, u *store.User, d map[string]any) {
	if u == nil {
		return
	}
	if as, err := s.myAssignments(c, u); err == nil && len(as) > 0 {
		d["Assigned"] = as
	}
	if teams, roles, err := s.store.UserTeams(c.Request().Context(), u.ID); err == nil {
		var led []*store.Team
		for i, t := range teams {
			if roles[i] == store.TeamLead {
				led = append(led, t)
			}
		}
		if u.Role == store.RoleAdmin {
			led, _ = s.store.Teams(c.Request().Context())
		}
		d["LedTeams"] = led
	}
}
