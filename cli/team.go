package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
)

// teamCmd is `podpath team`: teams from the command line, for the admin
// setting podpath up (the same as POST /api/admin/teams).
func teamCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "team", Short: "Manage teams: leads, single sign-on groups (see docs/TEAMS.md)"}
	url := server.DefaultConfig().DatabaseURL
	var name, group string
	var leads []string
	create := &cobra.Command{
		Use:   "create",
		Short: "Create a team with its leads, optionally mapped to an identity provider's group",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			name, group = strings.TrimSpace(name), strings.TrimSpace(group)
			if name == "" {
				return errors.New("--name is required: the team's name")
			}
			ctx := cmd.Context()
			st, err := openMigrated(ctx, url, newLogger("warn"))
			if err != nil {
				return err
			}
			defer st.Close()
			var users []*store.User
			if len(name) > 100 {
				return errors.New("--name can have at most 100 characters")
			}
			for _, email := range leads {
				email = strings.TrimSpace(email)
				u, err := st.UserByEmail(ctx, email)
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("no account has email %s (podpath user create makes one); no team created", email)
				}
				if err != nil {
					return err
				}
				if u.GuestWorkshop != 0 {
					return fmt.Errorf("%s is a workshop guest and cannot lead a team; no team created", email)
				}
				users = append(users, u)
			}
			t, err := st.CreateTeam(ctx, name, group, 0)
			switch {
			case errors.Is(err, store.ErrTeamNameTaken):
				return fmt.Errorf("a team named %q exists (podpath team list shows them)", name)
			case errors.Is(err, store.ErrSSOGroupTaken):
				return fmt.Errorf("another team is mapped to the group %q; a group maps to one team", group)
			case err != nil:
				return err
			}
			for _, u := range users {
				if err := st.AddTeamMember(ctx, t.ID, u.ID, store.TeamLead, store.ViaAdmin); err != nil {
					return err
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "team %d %q created with %d lead(s)", t.ID, t.Name, len(users))
			if group != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "; members of the group %q join it at single sign-on", group)
			}
			fmt.Fprintln(cmd.OutOrStdout())
			return nil
		},
	}
	create.Flags().StringVar(&name, "name", "", "the team's name")
	create.Flags().StringArrayVar(&leads, "lead", nil, "a lead's email (repeat for more)")
	create.Flags().StringVar(&group, "sso-group", "", "the value of the identity provider's group claim that puts users in this team")
	create.Flags().StringVar(&url, "database-url", url, "Postgres connection string (DATABASE_URL)")
	list := &cobra.Command{
		Use:   "list",
		Short: "List teams",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := openMigrated(cmd.Context(), url, newLogger("warn"))
			if err != nil {
				return err
			}
			defer st.Close()
			teams, err := st.Teams(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%-5s %-30s %-20s %s\n", "ID", "NAME", "SSO GROUP", "MEMBERS")
			for _, t := range teams {
				fmt.Fprintf(cmd.OutOrStdout(), "%-5d %-30s %-20s %d\n", t.ID, t.Name, t.SSOGroup, t.Members)
			}
			return nil
		},
	}
	list.Flags().StringVar(&url, "database-url", url, "Postgres connection string (DATABASE_URL)")
	cmd.AddCommand(create, list)
	return cmd
}
