package cli

import (
	"context"
	"errors"
	"fmt"
	"github.com/podpath/podpath/accounts"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"

	"github.com/podpath/podpath/app"
	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/sandbox/kube"
	"github.com/podpath/podpath/server"
	"github.com/podpath/podpath/store"
)

func serveCmd() *cobra.Command {
	cfg := server.DefaultConfig()
	var logLevel string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the podpath web server (applies database migrations first)",
		Long:  "Runs the web server. Every flag has a PODPATH_* environment variable; see `podpath serve --help` and the README.\n\n" + envHelp(),
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log := newLogger(logLevel)
			kube.RouteKlog(log) // the Docker backend's clients too
			ctx := cmd.Context()
			if err := cfg.Validate(); err != nil {
				return err
			}
			all, problems := labs.Catalog(cfg.LabDirs...)
			if fatal := problems.Fatal(); len(fatal) > 0 {
				return fmt.Errorf("the labs have problems (podpath labs validate shows them):\n%w", fatal)
			}
			for _, p := range problems {
				// A Killercoda scenario with problems is left out; the
				// others are served.
				log.Warn("lab left out or loaded with a warning", "problem", p.String())
			}
			tracks, problems := labs.CatalogTracks(all, cfg.LabDirs...)
			if len(problems) > 0 {
				return fmt.Errorf("the tracks have problems (podpath labs validate shows them):\n%w", problems)
			}
			st, err := openMigrated(ctx, cfg.DatabaseURL, log)
			if err != nil {
				return err
			}
			defer st.Close()
			opened, sandboxes, err := openBackend(cfg.NodeImage, log.With("component", "sandbox"))
			if err != nil {
				return err
			}
			if kb, ok := opened.(*kube.Backend); ok {
				if err := poolCapacity(ctx, cmd, kb, &cfg, log); err != nil {
					return err
				}
			}
			srv, err := app.New(cfg, app.Deps{Store: st, Sandboxes: sandboxes, Labs: all, Tracks: tracks, Log: log, Version: version()})
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", cfg.Listen)
			if err != nil {
				return fmt.Errorf("listen on %s: %w (PODPATH_LISTEN)", cfg.Listen, err)
			}
			url := cfg.PublicURL
			if url == "" {
				url = "http://" + displayAddr(ln.Addr().String())
			}
			log.Info("podpath is serving", "url", url, "labs", len(all), "tracks", len(tracks), "nodeImage", cfg.NodeImage)
			fmt.Fprintf(cmd.OutOrStdout(), "podpath is up: open %s\n", url)
			return srv.Run(ctx, ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Listen, "listen", cfg.Listen, "address to listen on (PODPATH_LISTEN)")
	f.StringVar(&cfg.PublicURL, "public-url", cfg.PublicURL, "URL learners use (PODPATH_PUBLIC_URL)")
	f.StringVar(&cfg.DatabaseURL, "database-url", cfg.DatabaseURL, "Postgres connection string (DATABASE_URL)")
	f.StringVar(&cfg.NodeImage, "node-image", cfg.NodeImage, "node image for learner clusters (PODPATH_NODE_IMAGE)")
	f.StringSliceVar(&cfg.LabDirs, "labs", cfg.LabDirs, "extra lab folders (PODPATH_LABS)")
	f.Float64Var(&cfg.CapacityCPU, "capacity-cpu", cfg.CapacityCPU, "CPU cores learner clusters may use (PODPATH_CAPACITY_CPU)")
	f.IntVar(&cfg.CapacityMemory, "capacity-memory", cfg.CapacityMemory, "MiB of memory learner clusters may use (PODPATH_CAPACITY_MEMORY)")
	f.IntVar(&cfg.ProvisionConcurrency, "provision-concurrency", cfg.ProvisionConcurrency, "clusters created at once (PODPATH_PROVISION_CONCURRENCY)")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "end idle sessions after (PODPATH_IDLE_TIMEOUT)")
	f.DurationVar(&cfg.MaxLifetime, "max-lifetime", cfg.MaxLifetime, "end sessions this long after they start (PODPATH_MAX_LIFETIME)")
	f.DurationVar(&cfg.HibernateAfter, "hibernate-after", cfg.HibernateAfter, "freeze idle clusters after (PODPATH_HIBERNATE_AFTER)")
	f.DurationVar(&cfg.Extension, "extension", cfg.Extension, "what extend adds (PODPATH_EXTENSION)")
	f.IntVar(&cfg.MaxExtensions, "max-extensions", cfg.MaxExtensions, "how often a session can be extended (PODPATH_MAX_EXTENSIONS)")
	f.DurationVar(&cfg.WarnBefore, "warn-before", cfg.WarnBefore, "warn this long before a session ends (PODPATH_WARN_BEFORE)")
	f.StringVar(&cfg.WarmPoolSpec, "warm-pool", cfg.WarmPoolSpec, "clusters created ahead: 2, or workers=1:2,workers=2:1 (PODPATH_WARM_POOL)")
	f.BoolVar(&cfg.AllowSignup, "allow-signup", cfg.AllowSignup, "let anyone create a learner account; otherwise an admin makes accounts with podpath user create (PODPATH_ALLOW_SIGNUP)")
	f.BoolVar(&cfg.SecureCookies, "secure-cookies", cfg.SecureCookies, "force Secure cookies; an https --public-url turns them on anyway (PODPATH_SECURE_COOKIES)")
	f.StringSliceVar(&cfg.TrustedProxies, "trusted-proxies", cfg.TrustedProxies, "CIDRs of reverse proxies whose X-Forwarded-For is believed (PODPATH_TRUSTED_PROXIES)")
	f.StringVar(&cfg.MetricsListen, "metrics-listen", cfg.MetricsListen, "second address serving /metrics without sign-in (PODPATH_METRICS_LISTEN)")
	f.DurationVar(&cfg.HTTPReadTimeout, "http-read-timeout", cfg.HTTPReadTimeout, "longest time to receive a request's body (PODPATH_HTTP_READ_TIMEOUT)")
	f.DurationVar(&cfg.HTTPWriteTimeout, "http-write-timeout", cfg.HTTPWriteTimeout, "longest time to write an ordinary response (PODPATH_HTTP_WRITE_TIMEOUT)")
	f.DurationVar(&cfg.HTTPIdleTimeout, "http-idle-timeout", cfg.HTTPIdleTimeout, "close idle keep-alive connections after (PODPATH_HTTP_IDLE_TIMEOUT)")
	f.IntVar(&cfg.MaxEventStreams, "max-event-streams", cfg.MaxEventStreams, "event streams one user may hold open (PODPATH_MAX_EVENT_STREAMS)")
	f.StringVar(&cfg.OIDCIssuer, "oidc-issuer", cfg.OIDCIssuer, "OpenID provider's issuer URL; turns on single sign-on (PODPATH_OIDC_ISSUER)")
	f.StringVar(&cfg.OIDCClientID, "oidc-client-id", cfg.OIDCClientID, "client ID at the OpenID provider (PODPATH_OIDC_CLIENT_ID)")
	f.StringVar(&cfg.OIDCClientSecret, "oidc-client-secret", cfg.OIDCClientSecret, "client secret at the OpenID provider; prefer the variable, flags show in ps (PODPATH_OIDC_CLIENT_SECRET)")
	f.StringSliceVar(&cfg.OIDCAllowedDomains, "oidc-allowed-domains", cfg.OIDCAllowedDomains, "e-mail domains that may sign in with SSO; empty: any (PODPATH_OIDC_ALLOWED_DOMAINS)")
	f.StringVar(&cfg.OIDCGroupsClaim, "oidc-groups-claim", cfg.OIDCGroupsClaim, "ID token claim matched against teams' SSO groups (PODPATH_OIDC_GROUPS_CLAIM)")
	f.StringVar(&cfg.OIDCName, "oidc-name", cfg.OIDCName, "label of the single sign-on button (PODPATH_OIDC_NAME)")
	f.BoolVar(&cfg.PasswordLogin, "password-login", cfg.PasswordLogin, "allow password sign-in and sign-up; false: single sign-on only, for everyone (PODPATH_PASSWORD_LOGIN)")
	f.DurationVar(&cfg.WebhookBackoff, "webhook-backoff", cfg.WebhookBackoff, "wait after a webhook delivery's first failure, doubled after each (PODPATH_WEBHOOK_BACKOFF)")
	f.IntVar(&cfg.WebhookMaxAttempts, "webhook-max-attempts", cfg.WebhookMaxAttempts, "attempts a webhook delivery gets before it fails (PODPATH_WEBHOOK_MAX_ATTEMPTS)")
	f.StringVar(&logLevel, "log-level", envOr("PODPATH_LOG_LEVEL", "info"), "debug, info, warn or error (PODPATH_LOG_LEVEL)")
	return cmd
}

// poolCapacity checks the lab pool on the Kubernetes backend and leaves the
// capacity to it: the engine reads the pool's nodes when it opens and
// every 30 s after, and admits a cluster where one node has room for it
// (session.Pooled). The host's cores and memory, the Docker backend's
// default, say nothing about the pool, so they are dropped; a capacity
// the operator set (a flag or its variable) stays, as a ceiling over the
// whole pool.
func poolCapacity(ctx context.Context, cmd *cobra.Command, kb *kube.Backend, cfg *server.Config, log *slog.Logger) error {
	cfg.CapacityFromPool = true
	if !cmd.Flags().Changed("capacity-cpu") && os.Getenv("PODPATH_CAPACITY_CPU") == "" {
		cfg.CapacityCPU = 0
	}
	if !cmd.Flags().Changed("capacity-memory") && os.Getenv("PODPATH_CAPACITY_MEMORY") == "" {
		cfg.CapacityMemory = 0
	}
	rooms, _, err := kb.Room(ctx)
	if err != nil {
		return err
	}
	if len(rooms) == 0 {
		return fmt.Errorf("the lab pool has no nodes: no schedulable node of the host cluster has the labels %v (PODPATH_KUBE_NODE_SELECTOR)", kb.Options().NodeSelector)
	}
	for _, r := range rooms {
		log.Info("lab pool node", "node", r.Name, "cpu", r.CPU, "memoryMiB", r.Memory)
	}
	log.Info("capacity from the lab pool", "nodes", len(rooms), "cpuCeiling", cfg.CapacityCPU, "memoryCeilingMiB", cfg.CapacityMemory)
	return nil
}

func envHelp() string {
	var b strings.Builder
	b.WriteString("Environment variables (default):\n")
	for _, v := range append(append([][3]string{}, server.EnvVars...), kube.EnvVars...) {
		fmt.Fprintf(&b, "  %-30s %s (%s)\n", v[0], v[2], v[1])
	}
	return b.String()
}

func displayAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if host == "" || host == "::" || host == "0.0.0.0" {
		if h, err := os.Hostname(); err == nil {
			host = h
		} else {
			host = "localhost"
		}
	}
	return net.JoinHostPort(host, port)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		l = slog.LevelInfo
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// openMigrated connects and brings the schema up to date, refusing a schema
// newer than this binary.
func openMigrated(ctx context.Context, url string, log *slog.Logger) (*store.Store, error) {
	st, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	from, to, err := st.Migrate(ctx)
	if err != nil {
		st.Close()
		return nil, err
	}
	if from != to {
		log.Info("database migrated", "from", from, "to", to)
	}
	return st, nil
}

func migrateCmd() *cobra.Command {
	url := server.DefaultConfig().DatabaseURL
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations this binary carries",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := store.Open(cmd.Context(), url)
			if err != nil {
				return err
			}
			defer st.Close()
			from, to, err := st.Migrate(cmd.Context())
			if err != nil {
				return err
			}
			if from == to {
				fmt.Fprintf(cmd.OutOrStdout(), "database schema is at version %d; nothing to do\n", to)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "database schema migrated from version %d to %d\n", from, to)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&url, "database-url", url, "Postgres connection string (DATABASE_URL)")
	return cmd
}

func userCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "user", Short: "Manage accounts"}
	url := server.DefaultConfig().DatabaseURL
	var email, name, password, role string
	var admin, ifNoAdmin bool
	create := &cobra.Command{
		Use:   "create",
		Short: "Create an account (--admin makes an admin; the password comes from --password or PODPATH_PASSWORD)",
		Long: "Creates an account. The password comes from --password or PODPATH_PASSWORD (which stays out of the process list).\n" +
			"With --admin --if-no-admin it creates the admin only when the database has none, and otherwise says which admin exists\n" +
			"(scripts/quickstart uses this to make the first admin once).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if admin {
				role = store.RoleAdmin
			}
			if ifNoAdmin && role != store.RoleAdmin {
				return fmt.Errorf("--if-no-admin goes with --admin")
			}
			if role != store.RoleLearner && role != store.RoleInstructor && role != store.RoleAdmin {
				return fmt.Errorf("role must be learner, instructor or admin, not %q", role)
			}
			if password == "" {
				password = os.Getenv("PODPATH_PASSWORD")
			}
			e, err := accounts.ValidateEmail(email)
			if err != nil {
				return err
			}
			if err := accounts.ValidatePassword(password); err != nil {
				return fmt.Errorf("%w (give it with --password or PODPATH_PASSWORD)", err)
			}
			if name == "" {
				name = strings.SplitN(e, "@", 2)[0]
			}
			st, err := openMigrated(cmd.Context(), url, newLogger("warn"))
			if err != nil {
				return err
			}
			defer st.Close()
			hash, err := accounts.HashPassword(password)
			if err != nil {
				return err
			}
			var u *store.User
			if ifNoAdmin {
				var created bool
				u, created, err = st.CreateFirstAdmin(cmd.Context(), e, name, hash)
				if err == nil && !created {
					fmt.Fprintf(cmd.OutOrStdout(), "an admin exists (%s); nothing created\n", u.Email)
					return nil
				}
			} else {
				u, err = st.CreateUser(cmd.Context(), e, name, hash, role)
			}
			if errors.Is(err, store.ErrEmailTaken) {
				return fmt.Errorf("an account with email %s exists", e)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "created %s %s (id %d)\n", u.Role, u.Email, u.ID)
			return nil
		},
	}
	create.Flags().StringVar(&email, "email", "", "email to sign in with")
	create.Flags().StringVar(&name, "name", "", "display name")
	create.Flags().StringVar(&password, "password", "", "password (or PODPATH_PASSWORD)")
	create.Flags().StringVar(&role, "role", store.RoleLearner, "learner, instructor or admin")
	create.Flags().BoolVar(&admin, "admin", false, "make the account an admin")
	create.Flags().BoolVar(&ifNoAdmin, "if-no-admin", false, "with --admin: create it only if there is no admin yet")
	create.Flags().StringVar(&url, "database-url", url, "Postgres connection string (DATABASE_URL)")
	_ = create.MarkFlagRequired("email")
	cmd.AddCommand(create)

	var roleEmail, newRole string
	roleCmd := &cobra.Command{
		Use:   "role",
		Short: "Change an account's role (learner, instructor or admin): instructors run workshops",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if newRole != store.RoleLearner && newRole != store.RoleInstructor && newRole != store.RoleAdmin {
				return fmt.Errorf("--role must be learner, instructor or admin, not %q", newRole)
			}
			st, err := openMigrated(cmd.Context(), url, newLogger("warn"))
			if err != nil {
				return err
			}
			defer st.Close()
			u, err := st.UserByEmail(cmd.Context(), roleEmail)
			if errors.Is(err, store.ErrNotFound) {
				return fmt.Errorf("no account has email %s (podpath user create makes one)", roleEmail)
			}
			if err != nil {
				return err
			}
			if err := st.SetUserRole(cmd.Context(), u.ID, newRole); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s is now %s (was %s)\n", u.Email, newRole, u.Role)
			return nil
		},
	}
	roleCmd.Flags().StringVar(&roleEmail, "email", "", "the account's email")
	roleCmd.Flags().StringVar(&newRole, "role", "", "learner, instructor or admin")
	roleCmd.Flags().StringVar(&url, "database-url", url, "Postgres connection string (DATABASE_URL)")
	_ = roleCmd.MarkFlagRequired("email")
	_ = roleCmd.MarkFlagRequired("role")
	cmd.AddCommand(roleCmd)
	return cmd
}

// version names this build to the other replicas: the module version, or
// the commit it was built from.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			return s.Value[:12]
		}
	}
	return info.Main.Version
}
