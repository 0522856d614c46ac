package server

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/store"
)

func init() {
	pageNames = append(pageNames, "invite", "team", "history")
	for lg, words := range teamMessages {
		for k, v := range words {
			messages[lg][k] = v
		}
	}
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
		"ended":        "Ended",
		"stepsdone":    "Steps done",
		"timespent":    "time",
		"exportcsv":    "Export CSV",
		"exportjson":   "Export JSON",
		"nomembers":    "No members yet.",
		"noassignment": "Nothing assigned yet.",
		"teams":        "Teams",
		"teamneedlead": "Only the team's leads and admins can see its report.",
		"noteam":       "There is no such team.",
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
		"ended":        "结束",
		"stepsdone":    "完成的步骤",
		"timespent":    "用时",
		"exportcsv":    "导出 CSV",
		"exportjson":   "导出 JSON",
		"nomembers":    "还没有成员。",
		"noassignment": "还没有分配任何内容。",
		"teams":        "团队",
		"teamneedlead": "只有团队负责人和管理员能查看团队报告。",
		"noteam":       "没有这个团队。",
	},
}

func (s *Server) teamPageRoutes(e *echo.Echo) {
	e.GET("/invite/:token", s.pageInvite)
	e.POST("/invite/:token", s.formInvite, s.requireUserPage)
	e.GET("/teams/:id", s.pageTeam, s.requireUserPage)
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

func (s *Server) formInvite(c echo.Context) error {
	if err := checkFormCSRF(c); err != nil {
		return err
	}
	_, status, key, err := s.acceptInvite(c.Request().Context(), c.Param("token"), currentUser(c))
	if err != nil {
		return err
	}
	if key != "" {
		return s.pages.render(c, status, "invite", s.pageData(c, map[string]any{"Error": translate(key, lang(c))}))
	}
	return c.Redirect(http.StatusSeeOther, "/")
}

func (s *Server) pageTeam(c echo.Context) error {
	r, err := s.teamReport(c)
	if err != nil {
		if ae, ok := err.(*apiErr); ok {
			key := "teamneedlead"
			if ae.Status != http.StatusForbidden {
				key = "noteam"
			}
			return s.pages.render(c, ae.Status, "error", s.pageData(c, map[string]any{"Status": ae.Status, "Message": translate(key, lang(c))}))
		}
		return err
	}
	return s.pages.render(c, http.StatusOK, "team", s.pageData(c, map[string]any{"Report": r}))
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
