package server

import (
	"time"

	"github.com/podpath/podpath/store"
)

// Views of the teams API and the take-over log. Their keys are the ones
// the store rows' JSON tags gave these answers (TestTeamsJSONKeys).

// TeamBase is a team as every answer names it.
type TeamBase struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	SSOGroup  string    `json:"ssoGroup,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
	Members   int       `json:"members"`
}

func teamBase(t *store.Team) TeamBase {
	return TeamBase{ID: t.ID, Name: t.Name, SSOGroup: t.SSOGroup, CreatedAt: t.CreatedAt, Members: t.Members}
}

func teamView(t *store.Team) *TeamBase {
	v := teamBase(t)
	return &v
}

// MemberView is a member of a team.
type MemberView struct {
	UserID   int64     `json:"userId"`
	Email    string    `json:"email"`
	Name     string    `json:"name"`
	Role     string    `json:"role"`
	Via      string    `json:"via"`
	JoinedAt time.Time `json:"joinedAt"`
}

func memberView(m *store.TeamMemberRow) MemberView {
	return MemberView{UserID: m.UserID, Email: m.Email, Name: m.Name, Role: m.Role, Via: m.Via, JoinedAt: m.JoinedAt}
}

// InviteView is a team's invite link, without its token.
type InviteView struct {
	ID            int64      `json:"id"`
	TeamID        int64      `json:"teamId"`
	ExpiresAt     time.Time  `json:"expiresAt"`
	MaxUses       int        `json:"maxUses"`
	Uses          int        `json:"uses"`
	AllowedDomain string     `json:"allowedDomain,omitempty"`
	CreatedAt     time.Time  `json:"createdAt"`
	RevokedAt     *time.Time `json:"revokedAt,omitempty"`
}

func inviteView(i *store.Invite) InviteView {
	return InviteView{ID: i.ID, TeamID: i.TeamID, ExpiresAt: i.ExpiresAt, MaxUses: i.MaxUses, Uses: i.Uses,
		AllowedDomain: i.AllowedDomain, CreatedAt: i.CreatedAt, RevokedAt: i.RevokedAt}
}

// TakeoverView is one take-over of the log.
type TakeoverView struct {
	ID           int64      `json:"id"`
	WorkshopID   int64      `json:"workshopId"`
	InstructorID int64      `json:"instructorId"`
	Instructor   string     `json:"instructor"`
	LearnerID    int64      `json:"learnerId"`
	Learner      string     `json:"learner"`
	LabSession   *string    `json:"labSessionId,omitempty"`
	Node         string     `json:"node"`
	StartedAt    time.Time  `json:"startedAt"`
	EndedAt      *time.Time `json:"endedAt,omitempty"`
	EndedBy      *string    `json:"endedBy,omitempty"`
	// Seconds is how long it lasted (so far).
	Seconds int `json:"seconds"`
}

func takeoverView(t *store.Takeover) TakeoverView {
	v := TakeoverView{ID: t.ID, WorkshopID: t.WorkshopID, InstructorID: t.InstructorID, Instructor: t.Instructor,
		LearnerID: t.LearnerID, Learner: t.Learner, Node: t.Node, StartedAt: t.StartedAt, EndedAt: t.EndedAt,
		EndedBy: t.EndedBy, Seconds: t.Seconds}
	if t.LabSession != nil {
		id := t.LabSession.String()
		v.LabSession = &id
	}
	return v
}

// views shows every row of a list, as an empty list when there is none.
func views[R, V any](rows []*R, view func(*R) V) []V {
	out := make([]V, 0, len(rows))
	for _, r := range rows {
		out = append(out, view(r))
	}
	return out
}
