package labs

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Track is an ordered set of labs with a title and a description: a path
// through the catalog that a learner follows lab by lab. It lives in a
// folder beside the lab folders, holding a track.yaml and no lab.yaml.
type Track struct {
	ID          string `json:"id"`
	Title       Text   `json:"title"`
	Description Text   `json:"description"`
	// Labs are lab ids in the order the track takes them.
	Labs []string `json:"labs"`

	// Dir is the track's folder in its FS; File is its track.yaml as
	// problems name it.
	Dir  string `json:"-"`
	File string `json:"-"`
	// idLine and labLines place the problems CheckTracks finds: a
	// duplicate id, a lab id that is no lab.
	idLine   int
	labLines []int
}

// TrackFile is the name of a track's file in its folder.
const TrackFile = "track.yaml"

// trackFields are the fields of track.yaml, in the order the docs give them.
var trackFields = []string{"id", "title", "description", "labs"}

// LoadTrack reads and validates the track.yaml in folder dir of fsys: its
// fields, id, texts (in English and Chinese) and list of labs. Whether the
// labs exist, and whether another track has its id, is CheckTracks' to say.
// Its Chinese texts are linted as a lab's are (lint_zh.go); their style
// only when opts.Strict. It returns the track only when there are no
// problems.
func LoadTrack(fsys fs.FS, dir string, opts LoadOptions) (*Track, Problems) {
	file := path.Join(opts.DisplayRoot, dir, TrackFile)
	raw, err := fs.ReadFile(fsys, path.Join(dir, TrackFile))
	if err != nil {
		return nil, Problems{{File: file, Message: "cannot read track.yaml: " + errMessage(err)}}
	}
	var root yaml.Node
	if err := yaml.Unmarshal(raw, &root); err != nil {
		return nil, yamlProblems(file, err)
	}
	doc := document(&root)
	if doc == nil || doc.Kind != yaml.MappingNode || len(doc.Content) == 0 {
		line := 0
		if doc != nil {
			line = doc.Line
		}
		return nil, Problems{{File: file, Line: line, Message: "track.yaml needs id, title, description and labs, one per line (see docs/LABS.md, Tracks)"}}
	}
	d := &trackDecoder{file: file, track: &Track{Dir: dir, File: file}}
	d.decode(doc)
	d.chinese(doc, opts.Strict)
	if len(d.problems) > 0 {
		sort.SliceStable(d.problems, func(i, j int) bool { return d.problems[i].Line < d.problems[j].Line })
		return nil, d.problems
	}
	if _, err := fs.Stat(fsys, path.Join(dir, "lab.yaml")); err == nil {
		return nil, Problems{{File: file, Message: "this folder has a lab.yaml too; a folder is a lab (lab.yaml) or a track (track.yaml), not both: move the track to a folder of its own"}}
	}
	return d.track, nil
}

type trackDecoder struct {
	file     string
	track    *Track
	problems Problems
}

func (d *trackDecoder) at(line int, field, format string, args ...any) {
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

func (d *trackDecoder) decode(doc *yaml.Node) {
	t := d.track
	keys := map[string]int{}
	// guessed are the fields an unknown field is a typo of: their absence
	// follows from the typo and is not a second problem.
	guessed := map[string]bool{}
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if first, ok := keys[k.Value]; ok {
			d.at(k.Line, k.Value, "`%s` is set twice (first at line %d); keep one", k.Value, first)
			continue
		}
		keys[k.Value] = k.Line
		switch k.Value {
		case "id":
			t.idLine = k.Line
			if v.Kind != yaml.ScalarNode || v.ShortTag() == "!!null" {
				d.at(k.Line, "id", "`id` wants a single value, like from-yaml-to-process, got %s", gotWords(v))
				continue
			}
			t.ID = v.Value
			if !idRE.MatchString(t.ID) {
				d.at(k.Line, "id", "track id %q must be 1 to 63 lowercase letters, digits and dashes", t.ID)
			}
		case "title":
			t.Title = d.text(k, v)
		case "description":
			t.Description = d.text(k, v)
		case "labs":
			d.labs(k, v)
		default:
			msg := fmt.Sprintf("unknown field %q in a track", k.Value)
			if guess := closest(k.Value, trackFields); guess != "" {
				guessed[guess] = true
				msg += "; did you mean `" + guess + "`?"
			} else {
				msg += "; its fields are " + strings.Join(trackFields, ", ")
			}
			d.at(k.Line, k.Value, "%s", msg)
		}
	}
	for _, f := range trackFields {
		if _, ok := keys[f]; ok || guessed[f] {
			continue
		}
		switch f {
		case "id":
			d.at(doc.Line, "id", "a track needs an id: 1 to 63 lowercase letters, digits and dashes (id: my-track)")
		case "labs":
			d.at(doc.Line, "labs", "a track needs labs: the ids of its labs in order (labs: [lab-id, ...])")
		default:
			d.at(doc.Line, f, "a track needs a %s in English and Chinese (%s: {en: ..., zh: ...})", f, f)
		}
	}
}

// text decodes a title or description: a map of language to text, with
// every language of Languages.
func (d *trackDecoder) text(k, v *yaml.Node) Text {
	var t Text
	if v.Kind != yaml.MappingNode || v.Decode(&t) != nil {
		d.at(k.Line, k.Value, "`%s` wants a text in each language, like {en: ..., zh: ...}, got %s", k.Value, gotWords(v))
		return nil
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if lang := v.Content[i]; !slices.Contains(Languages, lang.Value) {
			d.at(lang.Line, k.Value+"."+lang.Value, "%s has a text in %q; languages are %s", k.Value, lang.Value, strings.Join(Languages, ", "))
		}
	}
	for _, lang := range Languages {
		if strings.TrimSpace(t[lang]) == "" {
			d.at(k.Line, k.Value+"."+lang, "%s needs its %s text (%s: ...): a track is shown in every language", k.Value, langName(lang), lang)
		}
	}
	return t
}

func (d *trackDecoder) labs(k, v *yaml.Node) {
	t := d.track
	if v.Kind != yaml.SequenceNode {
		if v.Kind == yaml.ScalarNode && v.ShortTag() != "!!null" && v.Value != "" {
			d.at(k.Line, "labs", "`labs` wants a list, like [%s], got %s", v.Value, gotWords(v))
		} else if v.Kind == yaml.ScalarNode {
			d.at(k.Line, "labs", "a track needs at least one lab: labs: [lab-id, ...]")
		} else {
			d.at(k.Line, "labs", "`labs` wants a list of lab ids (lines starting with -, or [a, b]), got %s", gotWords(v))
		}
		return
	}
	if len(v.Content) == 0 {
		d.at(k.Line, "labs", "a track needs at least one lab: labs: [lab-id, ...]")
		return
	}
	first := map[string]int{}
	for i, item := range v.Content {
		field := fmt.Sprintf("labs[%d]", i)
		if item.Kind != yaml.ScalarNode || item.ShortTag() == "!!null" || item.Value == "" {
			d.at(item.Line, field, "each item of labs is a lab id (the id: of its lab.yaml), got %s", gotWords(item))
			continue
		}
		if line, ok := first[item.Value]; ok {
			d.at(item.Line, field, "lab %q is listed twice (first at line %d); a track lists each lab once", item.Value, line)
			continue
		}
		first[item.Value] = item.Line
		t.Labs = append(t.Labs, item.Value)
		t.labLines = append(t.labLines, item.Line)
	}
}

// LoadTracks loads every track folder (a folder with a track.yaml) directly
// under root, sorted by folder name, so that a number in front orders them.
func LoadTracks(fsys fs.FS, root string, opts LoadOptions) ([]*Track, Problems) {
	entries, err := fs.ReadDir(fsys, root)
	if err != nil {
		return nil, Problems{{File: path.Join(opts.DisplayRoot, root), Message: "cannot read the labs folder: " + errMessage(err)}}
	}
	var tracks []*Track
	var problems Problems
	for _, e := range entries { // ReadDir sorts by name
		if !e.IsDir() {
			continue
		}
		dir := path.Join(root, e.Name())
		if _, err := fs.Stat(fsys, path.Join(dir, TrackFile)); err != nil {
			continue
		}
		t, ps := LoadTrack(fsys, dir, opts)
		problems = append(problems, ps...)
		if t != nil {
			tracks = append(tracks, t)
		}
	}
	return tracks, problems
}

// CheckTracks checks tracks against the labs of catalog: every lab a track
// lists must be one of them, and no two tracks may share an id.
func CheckTracks(tracks []*Track, catalog []*Lab) Problems {
	var ids []string
	for _, l := range catalog {
		ids = append(ids, l.ID)
	}
	var problems Problems
	seen := map[string]*Track{}
	for _, t := range tracks {
		if first, ok := seen[t.ID]; ok {
			problems = append(problems, Problem{File: t.File, Line: t.idLine, Field: "id",
				Message: fmt.Sprintf("track id %q is already used by %s; track ids must be unique", t.ID, first.File)})
		} else {
			seen[t.ID] = t
		}
		for i, id := range t.Labs {
			if Find(catalog, id) != nil {
				continue
			}
			msg := fmt.Sprintf("no lab %q: a track lists the ids of labs this server has", id)
			if guess := closest(id, ids); guess != "" {
				msg += "; did you mean `" + guess + "`?"
			} else {
				msg += "; labs are " + strings.Join(ids, ", ")
			}
			line := 0
			if i < len(t.labLines) {
				line = t.labLines[i]
			}
			problems = append(problems, Problem{File: t.File, Line: line, Field: fmt.Sprintf("labs[%d]", i), Message: msg})
		}
	}
	return problems
}

// BuiltinTracks loads the tracks shipped in the binary (not yet checked
// against the labs: CatalogTracks does that). Their Chinese texts keep to
// docs/GLOSSARY.zh.md, as the built-in labs' do.
func BuiltinTracks() ([]*Track, Problems) {
	return LoadTracks(builtinFS, "builtin", LoadOptions{DisplayRoot: "labs", Strict: true})
}

// LoadDirTracks loads the tracks in a folder on disk: the folder itself
// when it holds a track.yaml, or each track folder directly inside it. A
// folder of labs with no tracks has none, and no problem.
func LoadDirTracks(dir string) ([]*Track, Problems) {
	tracks, problems := loadDirTracks(dir)
	// The tracks of Killercoda's structure.json files; their problems,
	// and the scenarios', are LoadDir's to say.
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		_, kc, _ := loadDir(dir)
		tracks = append(tracks, kc...)
	}
	return tracks, problems
}

func loadDirTracks(dir string) ([]*Track, Problems) {
	clean := filepath.Clean(dir)
	if _, err := os.Stat(filepath.Join(clean, TrackFile)); err == nil {
		t, ps := LoadTrack(os.DirFS(filepath.Dir(clean)), filepath.Base(clean), LoadOptions{DisplayRoot: filepath.Dir(clean)})
		if t == nil {
			return nil, ps
		}
		return []*Track{t}, nil
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, nil // LoadDir says what is wrong with the folder
	}
	return LoadTracks(os.DirFS(dir), ".", LoadOptions{DisplayRoot: dir})
}

// CatalogTracks is the built-in tracks plus those in dirs, checked against
// catalog (the labs of Catalog with the same dirs).
func CatalogTracks(catalog []*Lab, dirs ...string) ([]*Track, Problems) {
	all, problems := BuiltinTracks()
	for _, d := range dirs {
		more, ps := LoadDirTracks(d)
		all, problems = append(all, more...), append(problems, ps...)
	}
	return all, append(problems, CheckTracks(all, catalog)...)
}

// FindTrack returns the track with id.
func FindTrack(all []*Track, id string) *Track {
	for _, t := range all {
		if t.ID == id {
			return t
		}
	}
	return nil
}
