package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/errs"
)

// Team is an admin's group of engineers: members, leads, and the tracks and
// labs assigned to them.
type Team struct {
	ID        int64
	Name      string
	SSOGroup  string
	CreatedAt time.Time
	Members   int
}

// Team roles.
const (
	TeamMember = "member"
	TeamLead   = "lead"
)

// How a member came to a team.
const (
	ViaAdmin  = "admin"
	ViaInvite = "invite"
	ViaSSO    = "sso"
)

// Errors of teams.
var (
	ErrTeamNameTaken  error = errs.E(errs.Conflict, "a team with this name exists")
	ErrSSOGroupTaken  error = errs.E(errs.Conflict, "another team is mapped to this group")
	ErrInviteInvalid  error = errs.E(errs.NotFound, "this invite link is not valid")
	ErrInviteExpired  error = errs.E(errs.Gone, "this invite link has expired")
	ErrInviteUsedUp   error = errs.E(errs.Gone, "this invite link has been used as often as it may be")
	ErrInviteDomain   error = errs.E(errs.Forbidden, "this invite link is for another e-mail domain")
	ErrAssignmentKind error = errs.E(errs.Invalid, "an assignment is a track or a lab")
)

const teamColumns = "t.id, t.name, coalesce(t.sso_group, ''), t.created_at, (SELECT count(*) FROM team_members m WHERE m.team_id = t.id)"

func scanTeam(row interface{ Scan(...any) error }) (*Team, error) {
	var t Team
	if err := row.Scan(&t.ID, &t.Name, &t.SSOGroup, &t.CreatedAt, &t.Members); err != nil {
		return nil, notFound(err)
	}
	return &t, nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullID(id int64) any {
	if id == 0 {
		return nil
	}
	return id
}

// CreateTeam adds a team; ssoGroup may be empty, createdBy 0 (the CLI).
func (s *Store) CreateTeam(ctx context.Context, name, ssoGroup string, createdBy int64) (*Team, error) {
	t, err := scanTeam(s.db(ctx).QueryRow(ctx, `WITH t AS (INSERT INTO teams (name, sso_group, created_by) VALUES ($1, $2, $3) RETURNING *)
		SELECT `+teamColumns+` FROM t`, name, nullString(ssoGroup), nullID(createdBy)))
	switch {
	case isUniqueViolation(err, "teams_name_key"):
		return nil, ErrTeamNameTaken
	case isUniqueViolation(err, "teams_sso_group_key"):
		return nil, ErrSSOGroupTaken
	}
	return t, wrap("create team", err)
}

// SetTeamSSOGroup maps a team to an identity provider's group ("" unmaps).
func (s *Store) SetTeamSSOGroup(ctx context.Context, teamID int64, group string) error {
	tag, err := s.db(ctx).Exec(ctx, `UPDATE teams SET sso_group = $2 WHERE id = $1`, teamID, nullString(group))
	if isUniqueViolation(err, "teams_sso_group_key") {
		return ErrSSOGroupTaken
	}
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap("map team", err)
}

// TeamByID finds a team.
func (s *Store) TeamByID(ctx context.Context, id int64) (*Team, error) {
	return scanTeam(s.db(ctx).QueryRow(ctx, `SELECT `+teamColumns+` FROM teams t WHERE t.id = $1`, id))
}

// Teams lists every team by name.
func (s *Store) Teams(ctx context.Context) ([]*Team, error) {
	return s.queryTeams(ctx, `SELECT `+teamColumns+` FROM teams t ORDER BY lower(t.name)`)
}

// UserTeams lists the teams a user is in, with the user's role in each.
func (s *Store) UserTeams(ctx context.Context, userID int64) ([]*Team, []string, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+teamColumns+`, m.role FROM teams t JOIN team_members m ON m.team_id = t.id
		WHERE m.user_id = $1 ORDER BY lower(t.name)`, userID)
	if err != nil {
		return nil, nil, wrap("user teams", err)
	}
	defer rows.Close()
	var teams []*Team
	var roles []string
	for rows.Next() {
		var t Team
		var role string
		if err := rows.Scan(&t.ID, &t.Name, &t.SSOGroup, &t.CreatedAt, &t.Members, &role); err != nil {
			return nil, nil, err
		}
		teams, roles = append(teams, &t), append(roles, role)
	}
	return teams, roles, wrap("user teams", rows.Err())
}

// TeamsBySSOGroups returns the teams mapped to any of the groups.
func (s *Store) TeamsBySSOGroups(ctx context.Context, groups []string) ([]*Team, error) {
	if len(groups) == 0 {
		return nil, nil
	}
	return s.queryTeams(ctx, `SELECT `+teamColumns+` FROM teams t WHERE t.sso_group = ANY($1) ORDER BY t.id`, groups)
}

func (s *Store) queryTeams(ctx context.Context, sql string, args ...any) ([]*Team, error) {
	rows, err := s.db(ctx).Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap("teams", err)
	}
	defer rows.Close()
	var out []*Team
	for rows.Next() {
		t, err := scanTeam(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, wrap("teams", rows.Err())
}

// AddTeamMember puts a user in a team. A member already there keeps the
// higher role (a lead stays a lead when an invite or SSO adds them again).
func (s *Store) AddTeamMember(ctx context.Context, teamID, userID int64, role, via string) error {
	_, err := s.db(ctx).Exec(ctx, `INSERT INTO team_members (team_id, user_id, role, via) VALUES ($1, $2, $3, $4)
		ON CONFLICT (team_id, user_id) DO UPDATE SET role = CASE WHEN team_members.role = 'lead' OR excluded.role = 'lead' THEN 'lead' ELSE 'member' END,
			-- a membership an admin or an invite made is not single sign-on's
			-- to take away later
			via = CASE WHEN team_members.via = 'sso' THEN excluded.via ELSE team_members.via END`,
		teamID, userID, role, via)
	return wrap("add team member", err)
}

// SetTeamRole sets a member's role (the user must be a member).
func (s *Store) SetTeamRole(ctx context.Context, teamID, userID int64, role string) error {
	tag, err := s.db(ctx).Exec(ctx, `UPDATE team_members SET role = $3 WHERE team_id = $1 AND user_id = $2`, teamID, userID, role)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap("set team role", err)
}

// RemoveTeamMember takes a user out of a team.
func (s *Store) RemoveTeamMember(ctx context.Context, teamID, userID int64) error {
	_, err := s.db(ctx).Exec(ctx, `DELETE FROM team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID)
	return wrap("remove team member", err)
}

// TeamRole is the user's role in the team, "" when not a member.
func (s *Store) TeamRole(ctx context.Context, teamID, userID int64) (string, error) {
	var role string
	err := s.db(ctx).QueryRow(ctx, `SELECT role FROM team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID).Scan(&role)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return role, wrap("team role", err)
}

// TeamMemberRow is a member as a team's lists show them.
type TeamMemberRow struct {
	UserID   int64
	Email    string
	Name     string
	Role     string
	Via      string
	JoinedAt time.Time
}

// TeamMembers lists a team's members by name.
func (s *Store) TeamMembers(ctx context.Context, teamID int64) ([]*TeamMemberRow, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT u.id, u.email, u.name, m.role, m.via, m.joined_at FROM team_members m JOIN users u ON u.id = m.user_id
		WHERE m.team_id = $1 ORDER BY lower(u.name), u.id`, teamID)
	if err != nil {
		return nil, wrap("team members", err)
	}
	defer rows.Close()
	var out []*TeamMemberRow
	for rows.Next() {
		var m TeamMemberRow
		if err := rows.Scan(&m.UserID, &m.Email, &m.Name, &m.Role, &m.Via, &m.JoinedAt); err != nil {
			return nil, err
		}
		out = append(out, &m)
	}
	return out, wrap("team members", rows.Err())
}

// Invite is a team's invite link (its token is shown only when made).
type Invite struct {
	ID            int64
	TeamID        int64
	ExpiresAt     time.Time
	MaxUses       int
	Uses          int
	AllowedDomain string
	CreatedAt     time.Time
	RevokedAt     *time.Time
}

const inviteColumns = "id, team_id, expires_at, max_uses, uses, coalesce(allowed_domain, ''), created_at, revoked_at"

func scanInvite(row interface{ Scan(...any) error }) (*Invite, error) {
	var i Invite
	if err := row.Scan(&i.ID, &i.TeamID, &i.ExpiresAt, &i.MaxUses, &i.Uses, &i.AllowedDomain, &i.CreatedAt, &i.RevokedAt); err != nil {
		return nil, notFound(err)
	}
	return &i, nil
}

func inviteHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

// CreateInvite stores an invite under the hash of token.
func (s *Store) CreateInvite(ctx context.Context, teamID int64, token string, expires time.Time, maxUses int, domain string, createdBy int64) (*Invite, error) {
	i, err := scanInvite(s.db(ctx).QueryRow(ctx, `INSERT INTO team_invites (team_id, token_hash, expires_at, max_uses, allowed_domain, created_by)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+inviteColumns, teamID, inviteHash(token), expires, maxUses, nullString(strings.ToLower(domain)), createdBy))
	return i, wrap("create invite", err)
}

// Invites lists a team's invites, newest first.
func (s *Store) Invites(ctx context.Context, teamID int64) ([]*Invite, error) {
	rows, err := s.db(ctx).Query(ctx, `SELECT `+inviteColumns+` FROM team_invites WHERE team_id = $1 ORDER BY id DESC`, teamID)
	if err != nil {
		return nil, wrap("invites", err)
	}
	defer rows.Close()
	var out []*Invite
	for rows.Next() {
		i, err := scanInvite(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, i)
	}
	return out, wrap("invites", rows.Err())
}

// RevokeInvite stops an invite working.
func (s *Store) RevokeInvite(ctx context.Context, teamID, inviteID int64) error {
	tag, err := s.db(ctx).Exec(ctx, `UPDATE team_invites SET revoked_at = coalesce(revoked_at, now()) WHERE team_id = $1 AND id = $2`, teamID, inviteID)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap("revoke invite", err)
}

// InviteByToken finds a live-or-not invite by its token.
func (s *Store) InviteByToken(ctx context.Context, token string) (*Invite, error) {
	return scanInvite(s.db(ctx).QueryRow(ctx, `SELECT `+inviteColumns+` FROM team_invites WHERE token_hash = $1`, inviteHash(token)))
}

// EmailDomain is the part of an address after its last @, lower case.
func EmailDomain(email string) string {
	at := strings.LastIndexByte(email, '@')
	if at < 0 {
		return ""
	}
	return strings.ToLower(email[at+1:])
}

// AcceptInvite puts the user in the invite's team as a member, counting a
// use. Under the invite row's lock it checks, in this order, that the
// invite exists and is not revoked, not expired, has uses left and fits
// the user's e-mail domain; on any refusal nothing is written. A member of
// the team already is let through without a use counted.
func (s *Store) AcceptInvite(ctx context.Context, token string, user *User) (*Team, error) {
	var teamID int64
	err := s.tx(ctx, func(tx pgx.Tx) error {
		i, err := scanInvite(tx.QueryRow(ctx, `SELECT `+inviteColumns+` FROM team_invites WHERE token_hash = $1 FOR UPDATE`, inviteHash(token)))
		if errors.Is(err, ErrNotFound) {
			return ErrInviteInvalid
		}
		if err != nil {
			return err
		}
		teamID = i.TeamID
		var member bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM team_members WHERE team_id = $1 AND user_id = $2)`, i.TeamID, user.ID).Scan(&member); err != nil {
			return err
		}
		switch {
		case i.RevokedAt != nil:
			return ErrInviteInvalid
		case member:
			return nil
		case !time.Now().Before(i.ExpiresAt):
			return ErrInviteExpired
		case i.Uses >= i.MaxUses:
			return ErrInviteUsedUp
		case i.AllowedDomain != "" && EmailDomain(user.Email) != i.AllowedDomain:
			return ErrInviteDomain
		}
		// Joined meanwhile by another invite or by single sign-on: in, and
		// no use counted.
		tag, err := tx.Exec(ctx, `INSERT INTO team_members (team_id, user_id, role, via) VALUES ($1, $2, 'member', 'invite') ON CONFLICT DO NOTHING`, i.TeamID, user.ID)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE team_invites SET uses = uses + 1 WHERE id = $1`, i.ID)
		return err
	})
	if err != nil {
		for _, known := range []error{ErrInviteInvalid, ErrInviteExpired, ErrInviteUsedUp, ErrInviteDomain} {
			if errors.Is(err, known) {
				return nil, known
			}
		}
		return nil, wrap("accept invite", err)
	}
	return s.TeamByID(ctx, teamID)
}

// Assignment is a track or lab a team's members are to finish by a date.
type Assignment struct {
	ID        int64
	TeamID    int64
	TeamName  string
	Kind      string
	Ref       string
	DueAt     time.Time
	CreatedAt time.Time
}

// Assignment kinds.
const (
	AssignTrack = "track"
	AssignLab   = "lab"
)

const assignmentColumns = "a.id, a.team_id, t.name, a.kind, a.ref, a.due_at, a.created_at"

func scanAssignment(row interface{ Scan(...any) error }) (*Assignment, error) {
	var a Assignment
	if err := row.Scan(&a.ID, &a.TeamID, &a.TeamName, &a.Kind, &a.Ref, &a.DueAt, &a.CreatedAt); err != nil {
		return nil, notFound(err)
	}
	return &a, nil
}

// Assign gives a team a track or lab with a due date; assigning the same
// again moves its due date.
func (s *Store) Assign(ctx context.Context, teamID int64, kind, ref string, due time.Time, by int64) (*Assignment, error) {
	if kind != AssignTrack && kind != AssignLab {
		return nil, ErrAssignmentKind
	}
	a, err := scanAssignment(s.db(ctx).QueryRow(ctx, `WITH a AS (
			INSERT INTO team_assignments (team_id, kind, ref, due_at, assigned_by) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (team_id, kind, ref) DO UPDATE SET due_at = excluded.due_at, assigned_by = excluded.assigned_by
			RETURNING *)
		SELECT `+assignmentColumns+` FROM a JOIN teams t ON t.id = a.team_id`, teamID, kind, ref, due, by))
	return a, wrap("assign", err)
}

// Unassign removes an assignment of the team.
func (s *Store) Unassign(ctx context.Context, teamID, id int64) error {
	tag, err := s.db(ctx).Exec(ctx, `DELETE FROM team_assignments WHERE team_id = $1 AND id = $2`, teamID, id)
	if err == nil && tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return wrap("unassign", err)
}

// TeamAssignments lists a team's assignments by due date.
func (s *Store) TeamAssignments(ctx context.Context, teamID int64) ([]*Assignment, error) {
	return s.queryAssignments(ctx, `SELECT `+assignmentColumns+` FROM team_assignments a JOIN teams t ON t.id = a.team_id
		WHERE a.team_id = $1 ORDER BY a.due_at, a.id`, teamID)
}

// UserAssignments lists what every team of the user assigned, by due date.
func (s *Store) UserAssignments(ctx context.Context, userID int64) ([]*Assignment, error) {
	return s.queryAssignments(ctx, `SELECT `+assignmentColumns+` FROM team_assignments a JOIN teams t ON t.id = a.team_id
		JOIN team_members m ON m.team_id = a.team_id WHERE m.user_id = $1 ORDER BY a.due_at, a.id`, userID)
}

func (s *Store) queryAssignments(ctx context.Context, sql string, args ...any) ([]*Assignment, error) {
	rows, err := s.db(ctx).Query(ctx, sql, args...)
	if err != nil {
		return nil, wrap("assignments", err)
	}
	defer rows.Close()
	var out []*Assignment
	for rows.Next() {
		a, err := scanAssignment(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, wrap("assignments", rows.Err())
}
