package nodeimage

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// goBinary describes one program built from the Go module proxy in a scratch
// module of its own, so the product's go.mod never carries what the node runs.
type goBinary struct {
	Name    string            `json:"name"`
	Require map[string]string `json:"require"`           // module path -> version
	Replace map[string]string `json:"replace,omitempty"` // module path -> "path version"
	// Main is the source of a generated main package; when empty, Package
	// (a main package inside a required module) is built.
	Main    string `json:"main,omitempty"`
	Package string `json:"package,omitempty"`
	LDFlags string `json:"ldflags,omitempty"`
	Tags    string `json:"tags,omitempty"`
	// CGO links with the C library (dynamically, so the binary needs the
	// glibc of Debian, which every podpath image has).
	CGO bool `json:"cgo,omitempty"`
}

func (g goBinary) key(goVersion string) string {
	b, _ := json.Marshal(struct {
		G  goBinary
		Go string
	}{g, goVersion})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:16]
}

// buildGo builds g, or returns the binary a previous build left in the cache.
func (b *builder) buildGo(ctx context.Context, g goBinary) (string, error) {
	goVersion, err := b.goVersion(ctx)
	if err != nil {
		return "", err
	}
	key := g.key(goVersion)
	out := filepath.Join(b.cacheDir, "bin", g.Name+"-"+key)
	if _, err := os.Stat(out); err == nil {
		b.detail("%s: cached (%s)", g.Name, filepath.Base(out))
		return out, nil
	}
	dir := filepath.Join(b.cacheDir, "work", "go-"+g.Name+"-"+key)
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(g.goMod(goVersion)), 0o644); err != nil {
		return "", err
	}
	target := g.Package
	if g.Main != "" {
		if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(g.Main), 0o644); err != nil {
			return "", err
		}
		target = "."
		b.detail("%s: resolving modules", g.Name)
		if err := b.goCmd(ctx, dir, g.CGO, nil, "mod", "tidy"); err != nil {
			return "", fmt.Errorf("resolve modules for %s: %w", g.Name, err)
		}
	} else {
		b.detail("%s: resolving modules", g.Name)
		args := []string{"get"}
		for _, m := range sortedKeys(g.Require) {
			args = append(args, m+"@"+g.Require[m])
		}
		if err := b.goCmd(ctx, dir, g.CGO, nil, args...); err != nil {
			return "", fmt.Errorf("fetch %s: %w", strings.Join(args[1:], " "), err)
		}
	}
	tmp := out + ".tmp"
	args := []string{"build", "-v", "-mod=mod", "-trimpath", "-o", tmp}
	if g.LDFlags != "" {
		args = append(args, "-ldflags", g.LDFlags)
	}
	if g.Tags != "" {
		args = append(args, "-tags", g.Tags)
	}
	args = append(args, target)
	start := time.Now()
	var compiled atomic.Int64
	stop := b.heartbeat(func() string {
		return fmt.Sprintf("%s: compiling, %d packages so far (%s)", g.Name, compiled.Load(), since(start))
	})
	err = b.goCmd(ctx, dir, g.CGO, func(line string) { compiled.Add(1) }, args...)
	stop()
	if err != nil {
		return "", fmt.Errorf("build %s: %w", g.Name, err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return "", err
	}
	b.detail("%s: built in %s", g.Name, since(start))
	_ = os.RemoveAll(dir)
	return out, nil
}

func (g goBinary) goMod(goVersion string) string {
	var s strings.Builder
	fmt.Fprintf(&s, "module podpath.local/build/%s\n\ngo %s\n\nrequire (\n", g.Name, strings.TrimPrefix(goVersion, "go"))
	for _, m := range sortedKeys(g.Require) {
		fmt.Fprintf(&s, "\t%s %s\n", m, g.Require[m])
	}
	s.WriteString(")\n")
	if len(g.Replace) > 0 {
		s.WriteString("\nreplace (\n")
		for _, m := range sortedKeys(g.Replace) {
			fmt.Fprintf(&s, "\t%s => %s\n", m, g.Replace[m])
		}
		s.WriteString(")\n")
	}
	return s.String()
}

// goCmd runs the go command in dir; each line it prints on stderr goes to
// onLine (go build -v names each package it compiles there).
func (b *builder) goCmd(ctx context.Context, dir string, cgo bool, onLine func(string), args ...string) error {
	cmd := exec.CommandContext(ctx, b.goBin, args...)
	cmd.Dir = dir
	cgoEnabled := "CGO_ENABLED=0"
	if cgo {
		cgoEnabled = "CGO_ENABLED=1"
	}
	cmd.Env = append(os.Environ(), cgoEnabled, "GOFLAGS=-buildvcs=false -mod=mod", "GOWORK=off")
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	cmd.Stdout = pw
	var tail []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			line := sc.Text()
			if onLine != nil {
				onLine(line)
			}
			tail = append(tail, line)
			if len(tail) > 30 {
				tail = tail[1:]
			}
		}
	}()
	err := cmd.Run()
	pw.Close()
	<-done
	if err != nil {
		var errLines []string
		for _, l := range tail {
			if onLine == nil || !looksLikePackage(l) {
				errLines = append(errLines, l)
			}
		}
		return fmt.Errorf("go %s: %v\n%s", args[0], err, strings.Join(errLines, "\n"))
	}
	return nil
}

func looksLikePackage(line string) bool {
	return !strings.ContainsAny(line, " :\t")
}

func (b *builder) goVersion(ctx context.Context) (string, error) {
	if b.goVer != "" {
		return b.goVer, nil
	}
	if b.goBin == "" {
		p, err := exec.LookPath("go")
		if err != nil {
			for _, c := range []string{"/usr/local/go/bin/go"} {
				if _, err := os.Stat(c); err == nil {
					p = c
				}
			}
		}
		if p == "" {
			return "", fmt.Errorf("the go command is needed to build Kubernetes from the Go module proxy: install Go (scripts/quickstart and scripts/test do) or put it on PATH")
		}
		b.goBin = p
	}
	out, err := exec.CommandContext(ctx, b.goBin, "env", "GOVERSION").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOVERSION: %w", err)
	}
	b.goVer = strings.TrimSpace(string(out))
	return b.goVer, nil
}

func sortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func since(t time.Time) string {
	return time.Since(t).Round(time.Second).String()
}
