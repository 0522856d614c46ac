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
	"github.com/yuin/goldmark/util"

	"github.com/podpath/podpath/labs"
	"github.com/podpath/podpath/store"
)

// markdown renders step text to sanitized HTML. A fenced code block's info
// string "bash node01" becomes <pre data-node="node01"><code
// class="language-bash">, which the page turns into copy and "run in
// terminal" buttons for that node.
type markdown struct {
	md     goldmark.Markdown
	policy *bluemonday.Policy
}

func newMarkdown() *markdown {
	md := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithRendererOptions(renderer.WithNodeRenderers(util.Prioritized(codeRenderer{}, 100))),
	)
	p := bluemonday.UGCPolicy()
	p.AllowAttrs("class").Matching(regexp.MustCompile(`^language-[\w+-]+$`)).OnElements("code")
	p.AllowAttrs("data-node").Matching(regexp.MustCompile(`^[a-z0-9-]+$`)).OnElements("pre")
	return &markdown{md: md, policy: p}
}

func (m *markdown) render(src string) (string, error) {
	var buf bytes.Buffer
	if err := m.md.Convert([]byte(src), &buf); err != nil {
		return "", err
	}
	return m.policy.Sanitize(buf.String()), nil
}

type codeRenderer struct{}

func (codeRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(ast.KindFencedCodeBlock, renderFencedCode)
}

func renderFencedCode(w util.BufWriter, source []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
	if !entering {
		return ast.WalkContinue, nil
	}
	cb := n.(*ast.FencedCodeBlock)
	var info []string
	if cb.Info != nil {
		info = strings.Fields(string(cb.Info.Segment.Value(source)))
	}
	w.WriteString("<pre")
	if len(info) > 1 {
		w.WriteString(` data-node="` + html.EscapeString(info[1]) + `"`)
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
	w.WriteString("</code></pre>\n")
	return ast.WalkSkipChildren, nil
}

// renderStep fills a step's Markdown with the session's cluster and renders it.
func (s *Server) renderStep(ctx context.Context, sess *store.LabSession, l *labs.Lab, md, lg string) (string, error) {
	sb, err := s.store.SandboxOf(ctx, sess.ID)
	if err != nil {
		return "", err
	}
	text, err := labs.Render(l.ID, md, s.templateData(sb.Name, l))
	if err != nil {
		return "", fmt.Errorf("step text of lab %s: %w", l.ID, err)
	}
	return s.md.render(text)
}
