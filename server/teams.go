package server

import (
	"context"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/store"
)

// Teams: an admin makes a team and its leads; members come by invite link
// or single sign-on group; leads assign tracks and labs with due dates and
// read the team's report. See docs/TEAMS.md.

// Invite limits.
const (
	defaultInviteHours = 7 * 24
	maxInviteHours     = 90 * 24
	defaultInviteUses  = 50
	maxInviteUses      = 10000
)

func (s *Server) teamRoutes(auth *echo.Group) {
	auth.GET("/teams", s.apiTeams)
	auth.POST("/admin/teams", s.apiCreateTeam, s.requireAdmin)
	auth.PUT("/admin/teams/:id/sso-group", s.apiSetTeamGroup, s.requireAdmin)
	auth.POST("/admin/teams/:id/members", s.apiAddTeamMember, s.requireAdmin)
	auth.GET("/teams/:id", s.apiTeam)
	auth.DELETE("/teams/:id/members/:user", s.apiRemoveTeamMember)
	auth.POST("/teams/:id/invites", s.apiCreateInvite)
	auth.GET("/teams/:id/invites", s.apiInvites)
	auth.DELETE("/teams/:id/invites/:invite", s.apiRevokeInvite)
	auth.POST("/teams/:id/assignments", s.apiAssign)
	auth.DELETE("/teams/:id/assignments/:assignment", s.apiUnassign)
	auth.GET("/teams/:id/report", s.apiTeamReport)
	auth.GET("/teams/:id/report.csv", s.apiTeamReportCSV)
	auth.POST("/invites/:token/accept", s.apiAcceptInvite)
	auth.GET("/me/assignments", s.apiMyAssignments)
	auth.GET("/me/history", s.apiMyHistory)
}

func pathID(c echo.Context, name, what string) (int64, error) {
	id, err := strconv.ParseInt(c.Param(name), 10, 64)
	if err != nil || id <= 0 {
		return 0, errs.E(errs.Invalid, fmt.Sprintf("%.40q is not a %s id (a number)", c.Param(name), what))
	}
	return id, nil
}

// teamFor reads the team of the path and checks the user may act on it:
// an admin on any team, a lead on theirs. Anyone else is refused with 403,
// members of another team and strangers alike, once the team exists.
func (s *Server) teamFor(c echo.Context) (*store.Team, error) {
	id, err := pathID(c, "id", "team")
	if err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	t, err := s.store.TeamByID(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errs.Reword(err, fmt.Sprintf("no team %d; GET /api/teams lists yours", id))
	}
	if err != nil {
		return nil, err
	}
	u := currentUser(c)
	if u.Role == store.RoleAdmin {
		return t, nil
	}
	role, err := s.store.TeamRole(ctx, t.ID, u.ID)
	if err != nil {
		return nil, err
	}
	if role != store.TeamLead {
		// The team's name is not said: anyone signed in could list them.
		return nil, errs.E(errs.Forbidden, fmt.Sprintf("only the leads of team %d and admins can do this", t.ID))
	}
	return t, nil
}

type teamRequest struct {
	Name     string   `json:"name"`
	SSOGroup string   `json:"ssoGroup"`
	Leads    []string `json:"leads"`
}

func (s *Server) apiCreateTeam(c echo.Context) error {
	var req teamRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	req.Name, req.SSOGroup = strings.TrimSpace(req.Name), strings.TrimSpace(req.SSOGroup)
	if req.Name == "" || len(req.Name) > 100 {
		return errs.E(errs.Invalid, `"name" is required: the team's name, up to 100 characters`)
	}
	if len(req.SSOGroup) > 200 {
		return errs.E(errs.Invalid, `"ssoGroup" can have at most 200 characters`)
	}
	ctx := c.Request().Context()
	// Every lead must have an account before anything is written.
	var leads []*store.User
	for _, email := range req.Leads {
		u, err := s.store.UserByEmail(ctx, strings.TrimSpace(email))
		if errors.Is(err, store.ErrNotFound) {
			return errs.E(errs.Invalid, fmt.Sprintf("lead %.100q has no account; create it first with: PODPATH_PASSWORD=… podpath user create --email %.100s (or let them sign in once by single sign-on)", email, email))
		}
		if err != nil {
			return err
		}
		if u.GuestWorkshop != 0 {
			return errs.E(errs.Invalid, fmt.Sprintf("%.100q is a workshop guest and cannot lead a team", email))
		}
		leads = append(leads, u)
	}
	t, err := s.store.CreateTeam(ctx, req.Name, req.SSOGroup, currentUser(c).ID)
	switch {
	case errors.Is(err, store.ErrTeamNameTaken):
		return errs.Reword(err, fmt.Sprintf("a team named %q exists; pick another name", req.Name))
	case errors.Is(err, store.ErrSSOGroupTaken):
		return errs.Reword(err, fmt.Sprintf("another team is mapped to the group %q; a group maps to one team", req.SSOGroup))
	case err != nil:
		return err
	}
	for _, u := range leads {
		if err := s.store.AddTeamMember(ctx, t.ID, u.ID, store.TeamLead, store.ViaAdmin); err != nil {
			return err
		}
	}
	t, err = s.store.TeamByID(ctx, t.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, teamView(t))
}

func (s *Server) apiSetTeamGroup(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	var req struct {
		SSOGroup string `json:"ssoGroup"`
	}
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if len(req.SSOGroup) > 200 {
		return errs.E(errs.Invalid, `"ssoGroup" can have at most 200 characters`)
	}
	err = s.store.SetTeamSSOGroup(c.Request().Context(), t.ID, strings.TrimSpace(req.SSOGroup))
	if errors.Is(err, store.ErrSSOGroupTaken) {
		return errs.Reword(err, fmt.Sprintf("another team is mapped to the group %q; a group maps to one team", req.SSOGroup))
	}
	if err != nil {
		return err
	}
	t, err = s.store.TeamByID(c.Request().Context(), t.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, teamView(t))
}

func (s *Server) apiAddTeamMember(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	var req struct {
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	if req.Role == "" {
		req.Role = store.TeamMember
	}
	if req.Role != store.TeamMember && req.Role != store.TeamLead {
		return errs.E(errs.Invalid, fmt.Sprintf(`"role" %.20q: use "member" or "lead"`, req.Role))
	}
	ctx := c.Request().Context()
	u, err := s.store.UserByEmail(ctx, strings.TrimSpace(req.Email))
	if errors.Is(err, store.ErrNotFound) {
		return errs.E(errs.Invalid, fmt.Sprintf("%.100q has no account; create it first with: PODPATH_PASSWORD=… podpath user create --email %.100s (or let them sign in once by single sign-on)", req.Email, req.Email))
	}
	if err != nil {
		return err
	}
	if u.GuestWorkshop != 0 {
		return errs.E(errs.Invalid, fmt.Sprintf("%.100q is a workshop guest and cannot join a team", req.Email))
	}
	if err := s.store.AddTeamMember(ctx, t.ID, u.ID, req.Role, store.ViaAdmin); err != nil {
		return err
	}
	if req.Role == store.TeamMember {
		// An admin adding a lead as "member" makes them a member.
		if err := s.store.SetTeamRole(ctx, t.ID, u.ID, req.Role); err != nil {
			return err
		}
	}
	members, err := s.store.TeamMembers(ctx, t.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views(members, memberView))
}

func (s *Server) apiRemoveTeamMember(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	uid, err := pathID(c, "user", "user")
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	role, err := s.store.TeamRole(ctx, t.ID, uid)
	if err != nil {
		return err
	}
	if role == store.TeamLead && currentUser(c).Role != store.RoleAdmin {
		return errs.E(errs.Forbidden, "only admins remove a team's leads")
	}
	if err := s.store.RemoveTeamMember(ctx, t.ID, uid); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// TeamListItem is a team as GET /api/teams lists it.
type TeamListItem struct {
	TeamBase
	// Role is the user's role in it; "" for an admin who is not a member.
	Role string `json:"role"`
}

func teamListItem(t *store.Team, role string) TeamListItem {
	return TeamListItem{TeamBase: teamBase(t), Role: role}
}

func (s *Server) apiTeams(c echo.Context) error {
	u := currentUser(c)
	ctx := c.Request().Context()
	mine, roles, err := s.store.UserTeams(ctx, u.ID)
	if err != nil {
		return err
	}
	out := []TeamListItem{}
	seen := map[int64]bool{}
	for i, t := range mine {
		out = append(out, teamListItem(t, roles[i]))
		seen[t.ID] = true
	}
	if u.Role == store.RoleAdmin {
		all, err := s.store.Teams(ctx)
		if err != nil {
			return err
		}
		for _, t := range all {
			if !seen[t.ID] {
				out = append(out, teamListItem(t, ""))
			}
		}
	}
	return c.JSON(http.StatusOK, out)
}

// TeamView is a team for its leads: members, assignments, invites.
type TeamView struct {
	TeamBase
	MemberList  []MemberView      `json:"memberList"`
	Assignments []*AssignmentView `json:"assignments"`
	Invites     []InviteView      `json:"invites"`
}

func (s *Server) apiTeam(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	members, err := s.store.TeamMembers(ctx, t.ID)
	if err != nil {
		return err
	}
	as, err := s.store.TeamAssignments(ctx, t.ID)
	if err != nil {
		return err
	}
	invites, err := s.store.Invites(ctx, t.ID)
	if err != nil {
		return err
	}
	v := &TeamView{TeamBase: teamBase(t), MemberList: views(members, memberView), Invites: views(invites, inviteView), Assignments: []*AssignmentView{}}
	for _, a := range as {
		v.Assignments = append(v.Assignments, s.assignmentView(a, lang(c)))
	}
	return c.JSON(http.StatusOK, v)
}

type inviteRequest struct {
	ExpiresInHours int    `json:"expiresInHours"`
	MaxUses        int    `json:"maxUses"`
	AllowedDomain  string `json:"allowedDomain"`
}

// InviteCreated is a new invite with its link, shown this once.
type InviteCreated struct {
	InviteView
	URL   string `json:"url"`
	Token string `json:"token"`
}

func (s *Server) apiCreateInvite(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	var req inviteRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	inv, err := s.createInvite(c, t, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, inv)
}

// createInvite checks an invite request and makes the invite, for the API
// and the team page alike.
func (s *Server) createInvite(c echo.Context, t *store.Team, req inviteRequest) (*InviteCreated, error) {
	if req.ExpiresInHours == 0 {
		req.ExpiresInHours = defaultInviteHours
	}
	if req.MaxUses == 0 {
		req.MaxUses = defaultInviteUses
	}
	if req.ExpiresInHours < 1 || req.ExpiresInHours > maxInviteHours {
		return nil, errs.E(errs.Invalid, fmt.Sprintf(`"expiresInHours" is %d: use 1 to %d (default %d, a week)`, req.ExpiresInHours, maxInviteHours, defaultInviteHours))
	}
	if req.MaxUses < 1 || req.MaxUses > maxInviteUses {
		return nil, errs.E(errs.Invalid, fmt.Sprintf(`"maxUses" is %d: use 1 to %d (default %d)`, req.MaxUses, maxInviteUses, defaultInviteUses))
	}
	domain := strings.ToLower(strings.TrimPrefix(strings.TrimSpace(req.AllowedDomain), "@"))
	if domain != "" && (!strings.Contains(domain, ".") || strings.ContainsAny(domain, "@/ \t") || len(domain) > 253) {
		return nil, errs.E(errs.Invalid, fmt.Sprintf(`"allowedDomain" %.60q is not a domain; write it like example.com`, req.AllowedDomain))
	}
	token := accounts.NewToken(24)
	inv, err := s.store.CreateInvite(c.Request().Context(), t.ID, token, time.Now().Add(time.Duration(req.ExpiresInHours)*time.Hour), req.MaxUses, domain, currentUser(c).ID)
	if err != nil {
		return nil, err
	}
	return &InviteCreated{InviteView: inviteView(inv), Token: token, URL: s.publicBase(c) + "/invite/" + token}, nil
}

// publicBase is how learners reach this server: PODPATH_PUBLIC_URL, or
// the request's scheme and host.
func (s *Server) publicBase(c echo.Context) string {
	if s.cfg.PublicURL != "" {
		return strings.TrimRight(s.cfg.PublicURL, "/")
	}
	scheme := "http"
	if s.secure(c) {
		scheme = "https"
	}
	return scheme + "://" + c.Request().Host
}

func (s *Server) apiInvites(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	list, err := s.store.Invites(c.Request().Context(), t.ID)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, views(list, inviteView))
}

func (s *Server) apiRevokeInvite(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	id, err := pathID(c, "invite", "invite")
	if err != nil {
		return err
	}
	err = s.store.RevokeInvite(c.Request().Context(), t.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return errs.Reword(err, fmt.Sprintf("team %q has no invite %d", t.Name, id))
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// acceptInvite joins the signed-in user to the invite's team, or says
// why not: an error of a kind with the message catalog's key.
func (s *Server) acceptInvite(ctx context.Context, token string, u *store.User) (*store.Team, error) {
	refuse := func(kind errs.Kind, key string, cause error) error {
		return &errs.Error{Kind: kind, Key: key, Message: translate(key, "en"), Err: cause}
	}
	if u.GuestWorkshop != 0 {
		return nil, refuse(errs.Forbidden, "invguest", nil)
	}
	if len(token) == 0 || len(token) > 100 {
		return nil, refuse(errs.NotFound, "invinvalid", nil)
	}
	t, err := s.store.AcceptInvite(ctx, token, u)
	switch {
	case errors.Is(err, store.ErrInviteInvalid):
		return nil, refuse(errs.KindOf(err), "invinvalid", err)
	case errors.Is(err, store.ErrInviteExpired):
		return nil, refuse(errs.KindOf(err), "invexpired", err)
	case errors.Is(err, store.ErrInviteUsedUp):
		return nil, refuse(errs.KindOf(err), "invusedup", err)
	case errors.Is(err, store.ErrInviteDomain):
		return nil, refuse(errs.KindOf(err), "invdomain", err)
	case err != nil:
		return nil, err
	}
	s.log.Info("team joined by invite", "team", t.ID, "user", u.ID)
	return t, nil
}

func (s *Server) apiAcceptInvite(c echo.Context) error {
	t, err := s.acceptInvite(c.Request().Context(), c.Param("token"), currentUser(c))
	if e, ok := errs.As(err); ok && e.Key != "" {
		return errs.E(e.Kind, e.Message) // the API has said these in English
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, teamView(t))
}

type assignRequest struct {
	Kind  string `json:"kind"`
	Ref   string `json:"ref"`
	DueAt string `json:"dueAt"`
}

// parseDue reads a due date: RFC 3339, or a day (YYYY-MM-DD, due at its
// end in UTC).
func parseDue(v string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, true
	}
	if d, err := time.Parse("2006-01-02", v); err == nil {
		return d.Add(24*time.Hour - time.Second), true
	}
	return time.Time{}, false
}

func (s *Server) apiAssign(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	var req assignRequest
	if err := bindJSON(c, &req); err != nil {
		return err
	}
	a, err := s.assign(c, t, req)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, a)
}

// assign checks an assignment request and makes (or moves) it, for the API
// and the team page alike.
func (s *Server) assign(c echo.Context, t *store.Team, req assignRequest) (*AssignmentView, error) {
	switch req.Kind {
	case store.AssignLab:
		if _, err := s.findLab(req.Ref); err != nil {
			return nil, errs.E(errs.Invalid, fmt.Sprintf(`"ref": no lab %.60q; GET /api/labs lists them`, req.Ref))
		}
	case store.AssignTrack:
		if _, ok := s.trackLabs(req.Ref); !ok {
			return nil, errs.E(errs.Invalid, fmt.Sprintf(`"ref": no track %.60q; GET /api/tracks lists them`, req.Ref))
		}
	default:
		return nil, errs.E(errs.Invalid, fmt.Sprintf(`"kind" %.20q: use "track" or "lab"`, req.Kind))
	}
	due, ok := parseDue(req.DueAt)
	if !ok {
		return nil, errs.E(errs.Invalid, fmt.Sprintf(`"dueAt" %.40q: write a date like 2026-12-15 or a time like 2026-12-15T17:00:00Z`, req.DueAt))
	}
	a, err := s.store.Assign(c.Request().Context(), t.ID, req.Kind, req.Ref, due, currentUser(c).ID)
	if err != nil {
		return nil, err
	}
	return s.assignmentView(a, lang(c)), nil
}

func (s *Server) apiUnassign(c echo.Context) error {
	t, err := s.teamFor(c)
	if err != nil {
		return err
	}
	id, err := pathID(c, "assignment", "assignment")
	if err != nil {
		return err
	}
	err = s.store.Unassign(c.Request().Context(), t.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return errs.Reword(err, fmt.Sprintf("team %q has no assignment %d", t.Name, id))
	}
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
