package grader

import (
	"bytes"
	"strconv"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// A history probe counts what the learner ran, not what they typed: each
// line of the history is parsed as bash (mvdan.cc/sh), and its comments,
// the arguments of commands that only print or test them (echo, printf,
// ":"...), variable values, here-documents and here-strings are dropped
// before the probe's regular expression sees the line, printed back in
// bash's canonical form. So "# crictl inspectp", "echo runc list" and
// x="crictl pods" match nothing, while "crictl inspect x | jq .info" still
// matches "crictl +inspect .*jq". The alias k is read as kubectl. Only
// commands bash stamped at or after since count ("#<unix time>" lines,
// which the node's profile makes bash write); a line without a stamp was
// not typed at a prompt.

// inertCommands print, test or ignore their arguments rather than run them.
var inertCommands = map[string]bool{
	"echo": true, "printf": true, ":": true, "true": true, "false": true,
	"test": true, "[": true, "[[": true, "let": true, "export": true,
	"declare": true, "typeset": true, "local": true, "readonly": true,
	"alias": true, "history": true, "read": true,
}

// historySlack allows for the node's clock and the server's to disagree a
// little (they are the same kernel's on one host).
const historySlack = 2 * time.Second

// historyCommands returns the commands of a bash history file run at or
// after since (all if since is zero), each as the line that matters.
func historyCommands(history string, since time.Time) []string {
	var out []string
	var stamp time.Time
	stamped := false
	for _, line := range strings.Split(history, "\n") {
		if strings.HasPrefix(line, "#") && isDigits(line[1:]) {
			if n, err := strconv.ParseInt(line[1:], 10, 64); err == nil {
				stamp, stamped = time.Unix(n, 0), true
			}
			continue
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		ok := since.IsZero() || (stamped && !stamp.Before(since.Add(-historySlack)))
		stamped = false
		if !ok {
			continue
		}
		if c := ranPart(line); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// ranPart is line without what bash would not run; "" when nothing runs or
// the line is not valid bash on its own (a multi-line command's piece).
func ranPart(line string) string {
	f, err := syntax.NewParser(syntax.KeepComments(false), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return ""
	}
	runs := false
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			for _, a := range x.Assigns {
				a.Value, a.Array = nil, nil
			}
			if len(x.Args) == 0 {
				return true
			}
			name := x.Args[0].Lit()
			if name == "k" {
				x.Args[0] = &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: "kubectl"}}}
				name = "kubectl"
			}
			if inertCommands[name] {
				// only what its arguments would run: $(...) and <(...)
				kept := x.Args[:1]
				for _, w := range x.Args[1:] {
					if sub := substitutions(w.Parts); len(sub) > 0 {
						kept = append(kept, &syntax.Word{Parts: sub})
					}
				}
				x.Args = kept
				return true
			}
			runs = true
		case *syntax.Redirect:
			if x.Hdoc != nil {
				x.Hdoc = nil
			}
			if x.Op == syntax.WordHdoc {
				x.Word = &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: "''"}}}
			}
		case *syntax.DeclClause, *syntax.TestClause, *syntax.ArithmCmd, *syntax.LetClause:
			return false
		}
		return true
	})
	if !runs {
		return ""
	}
	var b bytes.Buffer
	if err := syntax.NewPrinter(syntax.Minify(false)).Print(&b, f); err != nil {
		return ""
	}
	return strings.ReplaceAll(strings.TrimSpace(b.String()), "\n", "; ")
}

// substitutions returns the command and process substitutions among parts,
// looking into double quotes.
func substitutions(parts []syntax.WordPart) []syntax.WordPart {
	var out []syntax.WordPart
	for _, p := range parts {
		switch x := p.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			out = append(out, x)
		case *syntax.DblQuoted:
			out = append(out, substitutions(x.Parts)...)
		}
	}
	return out
}
