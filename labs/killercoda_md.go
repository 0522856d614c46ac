package labs

import (
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Killercoda's Markdown actions (docs/KILLERCODA.md) follow a closing
// backtick with no space: `cmd`{{exec}} and ```...```{{exec}} run the
// command in the terminal, {{exec interrupt}} presses Ctrl-C first,
// {{copy}} copies, and an empty {{}} turns the copy of inline code off.
// They are read before the Markdown renderer sees the text; any other {{ }}
// (Helm's, kubectl's go-template) is text and stays as it is.

// kcMarker is an action after a backtick; "execute" is Katacoda's name.
const kcMarker = `\{\{\s*(exec(?:ute)?(?:\s+interrupt)?|copy|)\s*\}\}`

var (
	// kcFenceOpenRE is an opening fence and its info string.
	kcFenceOpenRE = regexp.MustCompile("^(\\s*)(`{3,}|~{3,})\\s*([^`]*)$")
	// kcInlineRE is inline code followed by an action.
	kcInlineRE = regexp.MustCompile("(`+)([^`]+?)(`+)" + kcMarker)
	// kcTrafficRE is a traffic link's variable: the port's address on a
	// host (host1 is the control plane), or the port picker.
	kcTrafficRE = regexp.MustCompile(`\{\{\s*TRAFFIC_(?:HOST(\d+)_(\d+)|SELECTOR)\s*\}\}`)
	// kcImageRE is an image in Markdown or HTML, with its address.
	kcImageRE = regexp.MustCompile(`!\[[^\]]*\]\(\s*<?([^)\s>]+)|<img\s(?:[^>]*\s)?src=["']([^"']+)`)
	// kcHighlightRE is a line highlight after a fence's language: yaml{2,5}.
	kcHighlightRE = regexp.MustCompile(`\{[\d,\s-]*\}$`)
	// kcLineExecRE is a line that is only one inline command to run,
	// maybe as a list item.
	kcLineExecRE = regexp.MustCompile("^(\\s*(?:[-*+]\\s+|\\d+\\.\\s+)?)(`+)([^`]+?)(`+)" + kcMarker + "\\s*$")
)

// kcMarkdown turns a Killercoda text into podpath's Markdown: a block to run
// becomes a ```bash controlplane block (a "run in terminal" button on the
// control plane's terminal, where Killercoda's host01 terminal is), a line
// that is only `cmd`{{exec}} becomes such a block too, and the other
// markers go. It returns the commands to run in text order (the step's
// solve) and what it could not carry over.
func kcMarkdown(src string) (md string, commands []string, warnings []string) {
	lines := strings.Split(strings.ReplaceAll(src, "\r\n", "\n"), "\n")
	var out []string
	runBlock := func(indent string, cmd []string, interrupt bool) {
		info := "bash " + "controlplane"
		if interrupt {
			info += " interrupt"
		}
		out = append(out, indent+"```"+info)
		for _, c := range cmd {
			out = append(out, indent+strings.TrimPrefix(c, indent))
		}
		out = append(out, indent+"```")
		commands = append(commands, strings.Join(trimIndent(cmd, indent), "\n"))
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if m := kcFenceOpenRE.FindStringSubmatch(line); m != nil {
			indent, fence, info := m[1], m[2], strings.TrimSpace(m[3])
			info = strings.TrimSpace(kcHighlightRE.ReplaceAllString(info, ""))
			closeRE := regexp.MustCompile("^\\s*" + regexp.QuoteMeta(fence[:1]) + "{" + strconv.Itoa(len(fence)) + ",}(?:" + kcMarker + ")?(.*)$")
			var body []string
			j := i + 1
			closed := false
			var marker, rest string
			for ; j < len(lines); j++ {
				if c := closeRE.FindStringSubmatch(lines[j]); c != nil {
					closed, marker, rest = true, c[1], strings.TrimSpace(c[2])
					break
				}
				body = append(body, lines[j])
			}
			if !closed {
				// An unclosed fence runs to the end, as CommonMark reads it.
				out = append(out, lines[i:]...)
				break
			}
			switch {
			case strings.HasPrefix(marker, "exec"):
				runBlock(indent, body, strings.Contains(marker, "interrupt"))
			default:
				if info == "" && marker == "copy" {
					info = "text"
				}
				out = append(out, indent+fence+info)
				out = append(out, body...)
				out = append(out, indent+fence)
			}
			if rest != "" {
				out = append(out, indent+rest)
			}
			i = j
			continue
		}
		if m := kcLineExecRE.FindStringSubmatch(line); m != nil && strings.HasPrefix(m[5], "exec") && len(m[2]) == len(m[4]) {
			indent := strings.Repeat(" ", len(m[1]))
			if strings.TrimSpace(m[1]) != "" {
				out = append(out, strings.TrimRight(m[1], " "))
			}
			runBlock(indent, []string{indent + strings.TrimSpace(m[3])}, strings.Contains(m[5], "interrupt"))
			continue
		}
		line = kcInlineRE.ReplaceAllStringFunc(line, func(s string) string {
			m := kcInlineRE.FindStringSubmatch(s)
			if strings.HasPrefix(m[4], "exec") {
				commands = append(commands, strings.TrimSpace(m[2]))
			}
			return m[1] + m[2] + m[3]
		})
		for _, m := range kcTrafficRE.FindAllStringSubmatch(line, -1) {
			if m[1] != "" && m[1] != "1" {
				warnings = append(warnings, "traffic link "+m[0]+" names host "+m[1]+": podpath opens ports of the control plane (host 1); a NodePort answers there too (docs/KILLERCODA.md)")
			}
			if p, err := strconv.Atoi(m[2]); m[2] != "" && (err != nil || p < 1 || p > 65535) {
				warnings = append(warnings, "traffic link "+m[0]+": "+m[2]+" is not a port (1-65535)")
			}
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n"), commands, warnings
}

func trimIndent(lines []string, indent string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, indent)
	}
	return out
}

// kcTraffic fills a verbatim text's traffic links for a session:
// {{TRAFFIC_HOST1_<port>}} becomes the address of the port, and
// {{TRAFFIC_SELECTOR}} a link to the page where the learner picks a port
// (its address alone where the text makes the link itself).
func kcTraffic(md string, data TemplateData) string {
	if !strings.Contains(md, "TRAFFIC_") {
		return md
	}
	var b strings.Builder
	last := 0
	for _, m := range kcTrafficRE.FindAllStringSubmatchIndex(md, -1) {
		b.WriteString(md[last:m[0]])
		last = m[1]
		inLink := strings.HasSuffix(md[:m[0]], "](") || strings.HasSuffix(md[:m[0]], "href=\"")
		switch {
		case m[4] < 0 && inLink:
			b.WriteString(data.TrafficPorts)
		case m[4] < 0:
			b.WriteString("[Traffic / Ports](" + data.TrafficPorts + ")")
		default:
			p, err := strconv.Atoi(md[m[4]:m[5]])
			if err != nil {
				b.WriteString(md[m[0]:m[1]])
				continue
			}
			b.WriteString(data.Traffic(p))
		}
	}
	b.WriteString(md[last:])
	return b.String()
}

// kcImages makes the relative image addresses of a scenario's text, read
// from name (its path in the scenario folder dir of fsys), relative to the
// scenario folder: Killercoda resolves them from the text's own folder, so
// step2/text.md's ./flow.png is step2/flow.png. An image may sit above the
// scenario folder in its repository (../assets/logo.png, as Killercoda's own
// examples do): it stays ../assets/logo.png and is returned in shared by its
// path in fsys. What cannot show is warned about: an image above the
// repository, one that is not there, a file that is not an image. Code is
// left as it is. Addresses may be percent-encoded (a%20b.png), as in a
// browser; the files are found by their decoded names.
func kcImages(fsys fs.FS, dir, name, md string) (out string, shared []string, warnings []string) {
	lines := strings.Split(md, "\n")
	fence := ""
	for i, line := range lines {
		if t := strings.TrimSpace(line); fence != "" {
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
			continue
		} else if strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fence = t[:3]
			continue
		}
		ms := kcImageRE.FindAllStringSubmatchIndex(line, -1)
		for j := len(ms) - 1; j >= 0; j-- {
			m := ms[j]
			lo, hi := m[2], m[3]
			if lo < 0 {
				lo, hi = m[4], m[5]
			}
			if strings.Count(line[:m[0]], "`")%2 == 1 {
				continue // in inline code
			}
			src := line[lo:hi]
			file, rest := src, ""
			if k := strings.IndexAny(src, "?#"); k >= 0 {
				file, rest = src[:k], src[k:]
			}
			if file == "" || strings.Contains(file, ":") || strings.HasPrefix(file, "/") {
				continue // a web address, data: or the site's own
			}
			rel := path.Join(path.Dir(name), file)
			inRepo := path.Join(dir, unescapePath(rel))
			switch {
			case strings.HasPrefix(inRepo, ".."):
				warnings = append(warnings, "image "+src+" is outside the scenario's repository: only the repository's images are served, so it does not show (docs/KILLERCODA.md)")
				continue
			case !isImageFile(file):
				warnings = append(warnings, "image "+src+" is not a PNG, JPEG, GIF, WebP or SVG file, so it does not show")
			default:
				if _, err := fs.Stat(fsys, inRepo); err != nil {
					warnings = append(warnings, "image "+src+" is not there ("+inRepo+"), so it does not show")
				} else if strings.HasPrefix(rel, "..") {
					shared = append(shared, inRepo)
				}
			}
			line = line[:lo] + rel + rest + line[hi:]
		}
		lines[i] = line
	}
	return strings.Join(lines, "\n"), shared, warnings
}

// ImageTypes are the image files a lab's texts can show, by extension, with
// their content types. A lab folder also holds scripts and solutions: only
// these are served.
var ImageTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".svg": "image/svg+xml",
}

func isImageFile(name string) bool {
	_, ok := ImageTypes[strings.ToLower(path.Ext(name))]
	return ok
}

// SharedImage is the path in the lab's repository of an image its texts
// show from above the lab's folder (rel is its path from the folder, as
// ../assets/logo.png), when the lab is a Killercoda scenario whose texts
// name that image; ok is false for anything else.
func (l *Lab) SharedImage(rel string) (p string, ok bool) {
	if l.shared == nil {
		return "", false
	}
	p = path.Join(l.Dir, unescapePath(rel))
	return p, l.shared[p]
}

// unescapePath decodes a percent-encoded path, or leaves one that is not.
func unescapePath(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// ReadShared reads an image by its path in the lab's repository: one of
// those SharedImage names, nothing else.
func (l *Lab) ReadShared(p string) ([]byte, error) {
	if !l.shared[path.Clean(p)] {
		return nil, fmt.Errorf("%s is not an image of lab %s's texts", p, l.ID)
	}
	return fs.ReadFile(l.sharedFS, path.Clean(p))
}
