// Package testenv gives tests the real services they need: a Docker engine,
// the node image, Postgres. Under CI=true a missing service fails the test
// with what to do; elsewhere it skips, so `go test` works on a laptop
// without them.
package testenv

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/podpath/podpath/internal/dockercli"
)

// CI reports whether missing prerequisites must fail tests.
func CI() bool { return os.Getenv("CI") == "true" }

// Missing skips the test, or fails it under CI=true.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if CI() {
		t.Fatalf("CI=true and a prerequisite is missing: "+format, args...)
	}
	t.Skipf("prerequisite missing (set CI=true to fail instead): "+format, args...)
}

// Docker requires a reachable Docker engine.
func Docker(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := dockercli.Ping(ctx); err != nil {
		Missing(t, "%v (scripts/test starts dockerd)", err)
	}
}

// NodeImage requires the node image sandboxes use and returns its name.
func NodeImage(t testing.TB) string {
	t.Helper()
	Docker(t)
	ref := os.Getenv("PODPATH_NODE_IMAGE")
	if ref == "" {
		ref = "podpath/node:latest"
	}
	ok, err := dockercli.ImageExists(context.Background(), ref)
	if err != nil || !ok {
		Missing(t, "node image %s is not built (run `podpath nodeimage build`; scripts/test does it)", ref)
	}
	return ref
}

// Command requires a program on PATH and returns its path.
func Command(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s is not installed", name)
	}
	return p
}

// DefaultDatabaseURL is where tests find Postgres unless DATABASE_URL says
// otherwise; scripts/test and scripts/quickstart create that role and database.
const DefaultDatabaseURL = "postgres://podpath:podpath@localhost:5432/podpath"

// Postgres creates an empty database for the test, dropped afterwards, and
// returns its URL. The role in DATABASE_URL needs CREATEDB.
func Postgres(t testing.TB) string {
	t.Helper()
	admin := os.Getenv("DATABASE_URL")
	if admin == "" {
		admin = DefaultDatabaseURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		Missing(t, "Postgres at %s: %v (scripts/test starts it)", admin, err)
		return ""
	}
	defer conn.Close(context.Background())
	name := fmt.Sprintf("podpath_test_%d_%d", time.Now().UnixNano(), rand.IntN(1000))
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database (the role needs CREATEDB): %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, admin)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("postgres://%s:%s@%s:%d/%s", cfg.User, cfg.Password, cfg.Host, cfg.Port, name)
}

// RegistryMirror requires the registry mirror learner nodes pull Docker
// Hub's images through where there is no internet (PODPATH_REGISTRY_MIRRORS;
// scripts/test starts one) and returns the setting.
func RegistryMirror(t testing.TB) string {
	t.Helper()
	v := os.Getenv("PODPATH_REGISTRY_MIRRORS")
	if v == "" {
		Missing(t, "PODPATH_REGISTRY_MIRRORS is not set: the test's scenario pulls nginx:1.27 from Docker Hub's name (scripts/test starts a mirror: start_mirror in scripts/lib.sh; docs/LABS.md \"Images without internet\")")
	}
	return v
}
