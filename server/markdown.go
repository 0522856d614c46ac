package server

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"regexp"
	"strings"

	"github.com/microcosm-cc/bluemonday"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// markdown renders step text to sanitized HTML. A fenced code block's info
// string "bash node01" becomes <pre data-node="node01"><code
// class="language-bash">, which the page turns into a copy button and, for
// a command (bash, sh, shell, console) in guided mode, marked data-run, a
// "run in terminal" button for that node. In challenge mode a command has
// no run button and is hidden in a <details class="show-me">: the learner
// opens it with a click.
type markdown struct {
	// md is a renderer per mode and language (the "show me" label).
	md     map[string]goldmark.Markdown
	policy *bluemonday.Policy
}

func newMarkdown() *markdown {
	m := &markdown{md: map[string]goldmark.Markdown{}}
	for _, mode := range store.Modes {
		for _, lg := range labs.Languages {
			cr := codeRenderer{challenge: mode == store.ModeChallenge, showMe: translate("showme", lg)}
			// CJK: a soft line break between two Chinese characters is
			// dropped, not shown as a space (the texts are hard-wrapped).
			m.md[mode+"/"+lg] = goldmark.New(
				goldmark.WithExtensions(extension.GFM, extension.NewCJK(extension.WithEastAsianLineBreaks())),
				goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(cr, 100))),
			)
			// A Killercoda scenario's text keeps its raw HTML (<details>
			// hints and solutions, <img>): the policy below still
			// sanitizes what comes out.
			m.md[mode+"/"+lg+"/html"] = goldmark.New(
				goldmark.WithExtensions(extension.GFM, extension.NewCJK(extension.WithEastAsianLineBreaks())),
				goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(cr, 100)), gmhtml.WithUnsafe()),
			)
		}
	}
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w+-]+$`)).OnElements("code")
	p.AllowAttrs("data-node").Matching(regexp.MustCompile(`^[a-z0-9-]+$`)).OnElements("pre")
	p.AllowAttrs("data-run").Matching(regexp.MustCompile(`^true$`)).OnElements("pre")
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^show-me$`)).OnElements("details")
	p.AllowAttrs("target").Matching(regexp.MustCompile(`^_blank$`)).OnElements("a")
	m.policy = p
	return m
}

// render renders src for a session in mode, with labels in lang; rawHTML
// keeps the HTML in src (still sanitized).
func (m *markdown) render(src, mode, lang string, rawHTML bool) (string, error) {
	suffix := ""
	if rawHTML {
		suffix = "/html"
	}
	md, ok := m.md[mode+"/"+lang+suffix]
	if !ok {
		if md, ok = m.md[mode+"/en"+suffix]; !ok {
			md = m.md[store.ModeGuided+"/en"+suffix]
		}
	}
	var buf bytes.Buffer
	if err := md.Convert([]byte(src), &buf); err != nil {
		return "", err
	}
	return m.policy.Sanitize(buf.String()), nil
}

// codeRenderer writes fenced code blocks for one mode and language.
type codeRenderer struct {
	challenge bool
	showMe    string
}

func (r codeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, r.renderFencedCode)
}

// isCommand reports whether a code block's language is a shell's: its text
// is commands to type.
func isCommand(lang string) bool {
	switch lang {
	case "bash", "sh", "shell", "console":
		return true
	}
	return false
}

func (r codeRenderer) renderFencedCode(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	cb := n.(*ast.FencedCodeBlock)
	var info []string
	if cb.Info != nil {
		info = strings.Fields(string(cb.Info.Segment.Value(source)))
	}
	command := len(info) > 0 && isCommand(info[0])
	hidden := command && r.challenge
	if hidden {
		w.WriteString(`<details class="show-me"><summary>` + html.EscapeString(r.showMe) + "</summary>")
	}
	w.WriteString("<pre")
	if len(info) > 1 {
		w.WriteString(` data-node="` + html.EscapeString(info[1]) + `"`)
	}
	if command && !r.challenge {
		w.WriteString(` data-run="true"`)
	}
	w.WriteString("><code")
	if len(info) > 0 {
		w.WriteString(` class="language-` + html.EscapeString(info[0]) + `"`)
	}
	w.WriteString(">")
	lines := cb.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		w.WriteString(html.EscapeString(string(seg.Value(source))))
	}
	w.WriteString("</code></pre>")
	if hidden {
		w.WriteString("</details>")
	}
	w.WriteString("\n")
	return ast.WalkSkipChildren, nil
}

// renderStep fills a step's Markdown with the session's cluster and renders it.
func (s *Server) renderStep(ctx context.Context, sess *store.LabSession, l *labs.Lab, md, lg string) (string, error) {
	sb, err := s.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return "", err
	}
	d := s.templateData(sb.Name, l)
	d.TrafficPattern = "/sessions/" + sess.ID.String() + "/traffic/PORT/"
	d.TrafficPorts = "/sessions/" + sess.ID.String() + "/traffic"
	text, err := l.Render(md, d)
	if err != nil {
		return "", fmt.Errorf("step text of lab %s: %w", l.ID, err)
	}
	out, err := s.md.render(text, sess.Mode, lg, l.Verbatim)
	// A link to one of the session's ports opens beside the lab page.
	out = strings.ReplaceAll(out, `<a href="`+d.TrafficPorts, `<a target="_blank" href="`+d.TrafficPorts)
	return labImages(l, out), err
}
