package server

import (
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/web"
)

var placeholder = regexp.MustCompile(`\{\w+\}`)

func placeholders(s string) []string {
	p := placeholder.FindAllString(s, -1)
	slices.Sort(p)
	return slices.Compact(p)
}

// TestMessageCatalogBothLanguages: every message a page can show exists in
// English and in Chinese, not empty, with the same {names} to fill in. A
// key ending in "_one" is an English singular: its key without "_one"
// exists in both languages and has every name the singular has.
func TestMessageCatalogBothLanguages(t *testing.T) {
	en, zh := messages["en"], messages["zh"]
	if len(en) < 300 {
		t.Fatalf("the catalog has %d English messages: the pages' sets were not added", len(en))
	}
	for key, v := range en {
		if strings.TrimSpace(v) == "" {
			t.Errorf("en %q is empty", key)
		}
		if base, ok := strings.CutSuffix(key, "_one"); ok {
			if _, ok := en[base]; !ok {
				t.Errorf("en %q is the singular of %q, which is missing", key, base)
			}
			for _, p := range placeholders(v) {
				if !slices.Contains(placeholders(en[base]), p) {
					t.Errorf("en %q fills %s, which %q has not", key, p, base)
				}
			}
			continue
		}
		z, ok := zh[key]
		if !ok || strings.TrimSpace(z) == "" {
			t.Errorf("%q has no Chinese (en: %q)", key, v)
			continue
		}
		if pe, pz := placeholders(v), placeholders(z); !slices.Equal(pe, pz) {
			t.Errorf("%q fills %v in English but %v in Chinese", key, pe, pz)
		}
	}
	for key := range zh {
		if _, ok := en[key]; !ok {
			t.Errorf("%q is in Chinese only", key)
		}
		if strings.HasSuffix(key, "_one") {
			t.Errorf("zh %q: Chinese has one form for every count; use the key without _one", key)
		}
	}
}

// TestTemplatesUseCatalogKeys: every message a template names literally
// ({{t "key" ...}}, {{plural "key" ...}}, {{msg "key" ...}}) is in the
// catalog, so no page prints a bare key.
func TestTemplatesUseCatalogKeys(t *testing.T) {
	use := regexp.MustCompile(`[({]\s*(?:t|plural|msg) "([^"]+)"`)
	err := fs.WalkDir(web.Templates, "templates", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(web.Templates, path)
		if err != nil {
			return err
		}
		for _, m := range use.FindAllStringSubmatch(string(b), -1) {
			if _, ok := messages["en"][m[1]]; !ok {
				t.Errorf("%s uses message %q, which the catalog lacks", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPlural: a count of one takes the English singular; Chinese has one
// form; the count is filled in.
func TestPlural(t *testing.T) {
	for _, tc := range []struct {
		lg   string
		n    int
		want string
	}{
		{"en", 1, "1 attempt"}, {"en", 2, "2 attempts"}, {"en", 0, "0 attempts"}, {"zh", 1, "尝试 1 次"}, {"zh", 3, "尝试 3 次"},
	} {
		if got := plural(tc.lg, "wsattempts", tc.n); got != tc.want {
			t.Errorf("plural(%s, wsattempts, %d) = %q, want %q", tc.lg, tc.n, got, tc.want)
		}
	}
	if got := plural("en", "labcount", 1); got != "1 lab" {
		t.Errorf("1 lab: %q", got)
	}
}

// TestLocalize: the engine's refusals (errs with a catalog key) read in
// Chinese, the cluster's state included; one without a key stays as it was.
func TestLocalize(t *testing.T) {
	for _, tc := range []struct {
		err  *errs.Error
		want string
	}{
		{errs.Keyed(errs.Gone, "errsessionended", "this session has ended; start the lab again"), "这个会话已结束；请重新开始这个实验"},
		{errs.Keyed(errs.Conflict, "errnotready", "the cluster is not ready yet (it is provisioning)", "state", "provisioning"), "集群还没就绪（当前：创建中）"},
		{errs.Keyed(errs.Conflict, "errretry", "only a failed cluster can be retried; this one is ready", "state", "ready"), "只有失败的集群才能重试；这个集群当前：就绪"},
		{errs.Keyed(errs.NotFound, "errnostep", `lab static-pods has no step "nope"`, "lab", "static-pods", "step", `"nope"`), `实验 static-pods 没有步骤 "nope"`},
		{errs.E(errs.Conflict, "something new"), "something new"},
	} {
		if got := localize(tc.err, "zh"); got != tc.want {
			t.Errorf("localize(%q) = %q, want %q", tc.err.Message, got, tc.want)
		}
	}
	if got := localize(errs.Keyed(errs.Conflict, "errnotready", "the cluster is not ready (it is hibernated)", "state", "hibernated"), "en"); got != "the cluster is not ready yet (it is asleep)" {
		t.Errorf("in English: %q", got)
	}
}
