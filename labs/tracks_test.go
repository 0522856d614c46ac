package labs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The built-in track loads, checks against the built-in labs, and lists
// every one of them exactly once, in their order:.
func TestBuiltinTrack(t *testing.T) {
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	tracks, ps := CatalogTracks(all)
	if len(ps) > 0 {
		t.Fatalf("built-in tracks: %v", ps)
	}
	tr := FindTrack(tracks, "from-yaml-to-process")
	if tr == nil {
		t.Fatalf("no built-in track from-yaml-to-process among %d", len(tracks))
	}
	if tr.Title["en"] != "From YAML to a process" || tr.Title["zh"] != "从 YAML 到进程" {
		t.Errorf("title %v", tr.Title)
	}
	for _, lang := range Languages {
		if len(tr.Description[lang]) < 100 {
			t.Errorf("description in %s is too short: %q", lang, tr.Description[lang])
		}
	}
	// Every guided lab is on the path, in order; every challenge is in the
	// troubleshooting track, in order.
	var guided, challenges []string
	for _, l := range all { // Builtin sorts by order
		if l.Challenge {
			challenges = append(challenges, l.ID)
		} else {
			guided = append(guided, l.ID)
		}
	}
	if !slices.Equal(tr.Labs, guided) {
		t.Errorf("track labs\n %v\nwant every guided built-in lab in order:\n %v", tr.Labs, guided)
	}
	if tr.File != "labs/builtin/00-track-from-yaml-to-process/track.yaml" {
		t.Errorf("file %q", tr.File)
	}
	ts := FindTrack(tracks, "troubleshooting")
	if ts == nil {
		t.Fatal("no built-in track troubleshooting")
	}
	if len(challenges) < 6 || !slices.Equal(ts.Labs, challenges) {
		t.Errorf("troubleshooting track labs\n %v\nwant every challenge (at least six) in order:\n %v", ts.Labs, challenges)
	}
}

const validTrack = `id: my-track
title:
  en: My track
  zh: 我的路线
description: {en: Two labs, zh: 两个实验}
labs:
  - yaml-to-process
  - scheduler
`

// trackDir writes track.yaml files into folders of a temporary folder.
func trackDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		os.MkdirAll(filepath.Join(dir, name), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name, "track.yaml"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Each mistake in a track.yaml is reported at its file and line, against
// the built-in labs.
func TestTrackProblems(t *testing.T) {
	all, ps := Builtin()
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	cases := []struct {
		name, yaml string
		want       []string // file:line: message parts, one per problem
	}{
		{"valid", validTrack, nil},
		{"unknown lab", edit(t, validTrack, "  - scheduler\n", "  - schedular\n  - no-such-lab\n"),
			[]string{`t/track.yaml:8: no lab "schedular": a track lists the ids of labs this server has; did you mean ` + "`scheduler`?",
				`t/track.yaml:9: no lab "no-such-lab": a track lists the ids of labs this server has; labs are yaml-to-process, scheduler,`}},
		{"lab twice", validTrack + "  - yaml-to-process\n",
			[]string{`t/track.yaml:9: lab "yaml-to-process" is listed twice (first at line 7); a track lists each lab once (at labs[2])`}},
		{"missing zh", edit(t, validTrack, "  zh: 我的路线\n", "", "zh: 两个实验", "zh: ''"),
			[]string{"t/track.yaml:2: title needs its Chinese text (zh: ...)", "t/track.yaml:4: description needs its Chinese text (zh: ...)"}},
		{"missing en", edit(t, validTrack, "  en: My track\n", ""),
			[]string{"t/track.yaml:2: title needs its English text (en: ...)"}},
		{"unknown language", edit(t, validTrack, "  zh: 我的路线\n", "  zh: 我的路线\n  fr: Ma piste\n"),
			[]string{`t/track.yaml:5: title has a text in "fr"; languages are en, zh`}},
		{"title not a text", edit(t, validTrack, "title:\n  en: My track\n  zh: 我的路线\n", "title: My track\n"),
			[]string{"t/track.yaml:2: `title` wants a text in each language, like {en: ..., zh: ...}, got \"My track\""}},
		{"no description", edit(t, validTrack, "description: {en: Two labs, zh: 两个实验}\n", ""),
			[]string{"t/track.yaml:1: a track needs a description in English and Chinese"}},
		{"bad id", edit(t, validTrack, "id: my-track", "id: My_Track"),
			[]string{`t/track.yaml:1: track id "My_Track" must be 1 to 63 lowercase letters, digits and dashes (at id)`}},
		{"no id", edit(t, validTrack, "id: my-track\n", ""),
			[]string{"t/track.yaml:1: a track needs an id"}},
		{"empty labs", edit(t, validTrack, "labs:\n  - yaml-to-process\n  - scheduler\n", "labs: []\n"),
			[]string{"t/track.yaml:6: a track needs at least one lab: labs: [lab-id, ...]"}},
		{"labs with no value", edit(t, validTrack, "labs:\n  - yaml-to-process\n  - scheduler\n", "labs:\n"),
			[]string{"t/track.yaml:6: a track needs at least one lab"}},
		{"typo", edit(t, validTrack, "description:", "descripton:"),
			[]string{"t/track.yaml:5: unknown field \"descripton\" in a track; did you mean `description`?"}},
		{"unknown field", validTrack + "color: red\n",
			[]string{`t/track.yaml:9: unknown field "color" in a track; its fields are id, title, description, labs`}},
		{"field twice", validTrack + "id: again\n",
			[]string{"t/track.yaml:9: `id` is set twice (first at line 1); keep one"}},
		{"syntax", "id: [unclosed\n", []string{"t/track.yaml:"}},
		{"empty file", "", []string{"t/track.yaml: track.yaml needs id, title, description and labs"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := trackDir(t, map[string]string{"t": c.yaml})
			tracks, ps := LoadDirTracks(dir)
			if len(ps) == 0 {
				ps = CheckTracks(tracks, all)
			} else if len(tracks) > 0 {
				t.Errorf("tracks and problems both: %v", tracks)
			}
			var got []string
			for _, p := range ps {
				got = append(got, strings.TrimPrefix(p.String(), dir+string(filepath.Separator)))
			}
			if len(got) != len(c.want) {
				t.Fatalf("%d problems, want %d:\n%s", len(got), len(c.want), strings.Join(got, "\n"))
			}
			for i, w := range c.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("problem %d:\n %s\nwant it to contain\n %s", i, got[i], w)
				}
			}
			if c.want == nil && (len(tracks) != 1 || !slices.Equal(tracks[0].Labs, []string{"yaml-to-process", "scheduler"})) {
				t.Errorf("valid track loaded as %+v", tracks)
			}
		})
	}
}

// Two tracks with one id: the second is the problem, at its id line. A
// folder that is a lab and a track is one too. Tracks sort by folder name.
func TestTrackIDsAndFolders(t *testing.T) {
	all, _ := Builtin()
	dir := trackDir(t, map[string]string{"20-b": validTrack, "10-a": edit(t, validTrack, "id: my-track", "id: first")})
	tracks, ps := LoadDirTracks(dir)
	if len(ps) > 0 || len(tracks) != 2 || tracks[0].ID != "first" {
		t.Fatalf("tracks %v, problems %v", tracks, ps)
	}
	dir = trackDir(t, map[string]string{"a": validTrack, "b": "\n" + validTrack})
	tracks, ps = LoadDirTracks(dir)
	if len(ps) > 0 {
		t.Fatal(ps)
	}
	ps = CheckTracks(tracks, all)
	if len(ps) != 1 || !strings.HasSuffix(ps[0].File, "b/track.yaml") || ps[0].Line != 2 ||
		!strings.Contains(ps[0].Message, `track id "my-track" is already used by `+filepath.Join(dir, "a", "track.yaml")) {
		t.Errorf("duplicate id: %v", ps)
	}
	// A track folder given itself.
	one, ps := LoadDirTracks(filepath.Join(dir, "a"))
	if len(ps) > 0 || len(one) != 1 || one[0].File != filepath.Join(dir, "a", "track.yaml") {
		t.Errorf("one folder: %v %v", one, ps)
	}
	os.WriteFile(filepath.Join(dir, "a", "lab.yaml"), []byte("id: x\n"), 0o644)
	_, ps = LoadTrack(os.DirFS(dir), "a", LoadOptions{DisplayRoot: dir})
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "a folder is a lab (lab.yaml) or a track (track.yaml), not both") {
		t.Errorf("lab and track: %v", ps)
	}
	// A folder of labs without tracks has none, and no problem.
	if tr, ps := LoadDirTracks(t.TempDir()); len(tr) != 0 || len(ps) != 0 {
		t.Errorf("no tracks: %v %v", tr, ps)
	}
}
