package labs

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed all:builtin
var builtinFS embed.FS

// Builtin loads the labs shipped in the binary. They must have every text in
// English and Chinese, takeaways included, and no warnings: a lint is an
// error for them.
func Builtin() ([]*Lab, Problems) {
	return LoadAll(builtinFS, "builtin", LoadOptions{Languages: Languages, RequireTakeaways: true, Strict: true, DisplayRoot: "labs"})
}

// LoadDir loads the labs in a folder on disk: the folder itself when it
// holds a lab.yaml, or each lab folder directly inside it, and the
// Killercoda scenarios at any depth below it (LoadScenarios).
func LoadDir(dir string) ([]*Lab, Problems) {
	labs, _, problems := loadDir(dir)
	return labs, problems
}

func loadDir(dir string) ([]*Lab, []*Track, Problems) {
	fsys := os.DirFS(dir)
	if kcRepo(fsys) {
		return LoadScenarios(fsys, ".", LoadOptions{DisplayRoot: dir})
	}
	labs, problems := loadLabDir(dir)
	// Killercoda scenarios beside podpath's own labs.
	kc, tracks, ps := LoadScenarios(fsys, ".", LoadOptions{DisplayRoot: dir})
	return append(labs, kc...), tracks, append(problems, ps...)
}

// kcRepo reports whether the folder is a Killercoda scenario or course:
// an index.json or a structure.json at its top, and no lab.yaml.
func kcRepo(fsys fs.FS) bool {
	if _, err := fs.Stat(fsys, "lab.yaml"); err == nil {
		return false
	}
	for _, f := range []string{ScenarioFile, StructureFile} {
		if _, err := fs.Stat(fsys, f); err == nil {
			return true
		}
	}
	return false
}

func loadLabDir(dir string) ([]*Lab, Problems) {
	fsys := os.DirFS(dir)
	if _, err := fs.Stat(fsys, "lab.yaml"); err == nil {
		lab, ps := Load(os.DirFS(filepath.Dir(filepath.Clean(dir))), filepath.Base(filepath.Clean(dir)), LoadOptions{DisplayRoot: filepath.Dir(filepath.Clean(dir))})
		if lab == nil {
			return nil, ps
		}
		return []*Lab{lab}, ps
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil, Problems{{File: dir, Message: "not a folder of labs: give a lab folder (with lab.yaml) or a folder of lab folders"}}
	}
	return LoadAll(fsys, ".", LoadOptions{DisplayRoot: dir})
}

// Catalog is the built-in labs plus those in dirs. An id used twice is a problem.
func Catalog(dirs ...string) ([]*Lab, Problems) {
	all, problems := Builtin()
	seen := map[string]bool{}
	for _, l := range all {
		seen[l.ID] = true
	}
	for _, d := range dirs {
		more, ps := LoadDir(d)
		problems = append(problems, ps...)
		for _, l := range more {
			if seen[l.ID] {
				if l.Killercoda {
					problems = append(problems, Problem{File: filepath.Join(d, l.Dir, ScenarioFile), Scenario: true, Message: fmt.Sprintf("lab id %q, made of the scenario's folder, is already used by another lab; rename the folder", l.ID)})
					continue
				}
				problems = append(problems, Problem{File: filepath.Join(d, l.Dir, "lab.yaml"), Message: fmt.Sprintf("lab id %q is already used by another lab; pick another id", l.ID)})
				continue
			}
			seen[l.ID] = true
			all = append(all, l)
		}
	}
	return all, problems
}

// Find returns the lab with id.
func Find(all []*Lab, id string) *Lab {
	for _, l := range all {
		if l.ID == id {
			return l
		}
	}
	return nil
}

// Step returns the lab's step with the given id, or nil.
func (l *Lab) Step(id string) *Step {
	for i := range l.Steps {
		if l.Steps[i].ID == id {
			return &l.Steps[i]
		}
	}
	return nil
}
