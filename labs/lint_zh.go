package labs

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Lints of a lab's Chinese texts (intro.zh.md, steps/*.zh.md and every zh:
// of lab.yaml) against docs/GLOSSARY.zh.md, the rule book of the Chinese
// labs. They look at the prose only: code blocks, code spans, template
// actions and link targets are the English file's, byte for byte (rule 5).
//
//   - glossary forms: a form the glossary's table never uses (API Server,
//     控制面, Worker 节点, 容器组, Kubelet, an English Sandbox or Spec in a
//     Chinese sentence) and what it uses instead. An English word is no
//     mistake where it is part of a name, a path, a flag or a command line
//     (kube-scheduler, spec.nodeName, --namespace, kubectl taint), nor in
//     an English gloss after the Chinese term (镜像 Pod（mirror Pod）). A
//     lone spec is the field, and Taints and Tolerations the headings
//     kubectl describe prints (rule 4): they are left alone;
//   - identifiers: a name a learner types or reads on a screen
//     (RunPodSandbox, shareProcessNamespace, nodeName) stays whole (rule 4).
//     A translation that cut one and translated half of it (RunPod沙箱,
//     shareProcess命名空间) is reported, in code spans too; and so is a
//     Chinese text that has a camelCase name fewer times than its English
//     text, or never has a one-word code span of it;
//   - typography (rule 7): no space between two Chinese characters (API
//     服务器 在, 给 沙箱 分配, 点 **检查**) nor next to full-width
//     punctuation, a space between Chinese and Latin letters or digits
//     (容器 ID), and “…” rather than ASCII quotes around Chinese.
//
// For the built-in labs every finding is an error. A cut name is a
// problem of any lab: the learner looks for a name that does not exist.
// The rest are warnings of an operator's own lab (podpath labs validate
// --strict fails on them): the glossary's forms and its typography are
// the built-in labs' house style, which another lab's Chinese need not
// follow, and a translation may have good reason to name a name less
// often than its English text.

// glossaryFile is where the rules the messages cite are written.
const glossaryFile = "docs/GLOSSARY.zh.md"

// zhForm is a form the glossary never uses, with the one it uses instead.
type zhForm struct {
	re *regexp.Regexp
	// use is the glossary's form; "" for a name written in lower case.
	use string
	// why is the glossary's entry, as the message cites it.
	why string
	// word: the form is an English word, which is no mistake where it is
	// part of a name, a path, a flag or a command (kube-scheduler,
	// spec.nodeName, --namespace, kubectl taint).
	word bool
}

// zhForms are the forms of the glossary's table that it never uses in a
// Chinese sentence.
var zhForms = []zhForm{
	{regexp.MustCompile(`\bAPI[ -]?[Ss]erver\b`), "API 服务器", "API server is API 服务器, never API Server", true},
	{regexp.MustCompile(`控制面`), "控制平面", "control plane is 控制平面 (the node controlplane: 控制平面节点), never 控制面", false},
	{regexp.MustCompile(`\b[Ww]orkers?(?: ?[Nn]odes?)?\b(?: ?节点)?`), "工作节点", "a worker node is 工作节点, never Worker or Worker 节点", true},
	{regexp.MustCompile(`容器组|豆荚`), "Pod", "Pod stays Pod, never 容器组 or 豆荚", false},
	{regexp.MustCompile(`(?i)\b(?:kubelet|kube-proxy|kube-scheduler|kube-apiserver|kube-controller-manager|containerd|runc|crictl|kubectl|etcd|etcdctl|kubeadm|systemd|flannel)\b`), "", "rule 1: a program's name is written as upstream spells it, in lower case", true},
	{regexp.MustCompile(`\b[Cc]ontroller[ -]?[Mm]anager\b`), "控制器管理器", "the controller manager is 控制器管理器; the program is kube-controller-manager", true},
	{regexp.MustCompile(`\b[Ss]chedulers?\b`), "调度器", "the scheduler is 调度器; default-scheduler and kube-scheduler are names", true},
	{regexp.MustCompile(`\b(?:Pod )?[Ss]and[Bb]ox(?:es)?\b`), "Pod 沙箱 or 沙箱", "a Pod sandbox is Pod 沙箱 or 沙箱; RunPodSandbox, SandboxChanged and FailedCreatePodSandBox are names", true},
	{regexp.MustCompile(`\b(?:OCI )?[Rr]untime [Ss]pecs?\b`), "OCI 运行时规范", "the OCI runtime spec is OCI 运行时规范 on first mention, then 运行时规范; the document is config.json", true},
	// A lone spec is the field, which lab.yaml's texts name without code
	// spans: Node 的 spec 里.
	{regexp.MustCompile(`\b(?:Pod [Ss]pecs?|Specs?)\b`), "Pod 规约 (the OCI runtime spec: 运行时规范)", "a Pod spec is Pod 规约 and the OCI runtime spec 运行时规范; the field itself is `spec`", true},
	// Taints and Tolerations are the headings kubectl describe prints,
	// taints and tolerations the fields (rule 4).
	{regexp.MustCompile(`\b[Tt]aint\b`), "污点", "a taint is 污点, never Taint", true},
	{regexp.MustCompile(`\b[Ss]ockets?\b`), "套接字", "a socket is 套接字; containerd.sock is a name", true},
	{regexp.MustCompile(`\b[Tt]oleration\b`), "容忍度", "a toleration is 容忍度, never Toleration", true},
	{regexp.MustCompile(`\b[Nn]amespaces?\b`), "命名空间 (a Linux namespace) or 名字空间 (a Kubernetes Namespace)", "rule 6: a Linux namespace is 命名空间 (网络命名空间, PID 命名空间), a Kubernetes Namespace 名字空间", true},
	{regexp.MustCompile(`名称空间`), "名字空间", "rule 6: a Kubernetes Namespace is 名字空间, a Linux namespace 命名空间", false},
	{regexp.MustCompile(`选择算符`), "选择器", "a selector is 选择器, the form readers know", false},
	{regexp.MustCompile(`鉴权`), "授权", "authorization is 授权, the article's form", false},
	{regexp.MustCompile(`\bcgroups\b|\bC[Gg]roups?\b`), "cgroup", "cgroup, singular and plural", true},
	{regexp.MustCompile(`\bOOM Killer\b`), "OOM killer", "the OOM killer is OOM killer", true},
	{regexp.MustCompile(`\bPause\b`), "pause", "the pause container is written in lower case, pause 容器: it is the program /pause", true},
	{regexp.MustCompile(`\b[Ss]tatic Pods?\b`), "静态 Pod", "a static Pod is 静态 Pod", true},
	{regexp.MustCompile(`\b(?:[Ll]iveness|[Rr]eadiness|[Ss]tartup)(?:/(?:[Ll]iveness|[Rr]eadiness|[Ss]tartup))* ?探针`), "存活探针, 就绪探针, 启动探针", "the probes are 存活探针, 就绪探针 and 启动探针", true},
	{regexp.MustCompile(`\b[Mm]irror Pods?\b`), "镜像 Pod", "a mirror Pod is 镜像 Pod", true},
}

// knownIdentifiers are names a lab's Chinese text must keep whole, besides
// those its English texts name: CRI calls, fields, reasons and states.
var knownIdentifiers = []string{
	"RunPodSandbox", "StopPodSandbox", "RemovePodSandbox", "CreateContainer", "StartContainer", "StopContainer", "PullImage", "ExecSync",
	"shareProcessNamespace", "hostNetwork", "hostPID", "hostIPC", "nodeName", "nodeSelector", "restartPolicy", "initContainers",
	"terminationGracePeriodSeconds", "tolerationSeconds", "containerStatuses", "ownerReferences", "livenessProbe", "readinessProbe", "startupProbe",
	"SandboxChanged", "FailedCreatePodSandBox", "ContainerCreating", "PodInitializing", "PodScheduled", "ContainersReady", "FailedScheduling", "FailedMount",
	"NoSchedule", "NoExecute", "PreferNoSchedule", "CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "OOMKilled", "NotReady",
	"MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable", "BestEffort",
	"KubeletConfiguration", "EndpointSlice", "ConfigMap", "DaemonSet", "ReplicaSet", "ClusterIP",
	"runtimeSpec", "SystemdCgroup", "cgroupDriver", "staticPodPath", "evictionHard", "systemReserved", "kubeReserved", "maxPods", "SyncLoop",
}

// identifierRE is a word of Latin letters and digits.
var identifierRE = regexp.MustCompile(`[A-Za-z][A-Za-z0-9]*`)

// isIdentifier says whether a word is a name in camelCase or PascalCase: a
// lower-case letter followed by a capital somewhere in it (nodeName,
// RunPodSandbox).
func isIdentifier(w string) bool {
	for i := 1; i < len(w); i++ {
		if isLower(w[i-1]) && isUpper(w[i]) {
			return true
		}
	}
	return false
}

func isLower(b byte) bool { return 'a' <= b && b <= 'z' }
func isUpper(b byte) bool { return 'A' <= b && b <= 'Z' }
func isWordByte(b byte) bool {
	return isLower(b) || isUpper(b) || '0' <= b && b <= '9' || b == '_'
}

// zhFinding is one mistake in a Chinese text, at byte off of it (-1: in
// the text as a whole).
type zhFinding struct {
	off int
	msg string
	// lenient: a warning of an operator's lab (a problem of a built-in
	// one); a cut name is not.
	lenient bool
}

// masked is the text with what is not prose (fenced code blocks, code
// spans, template actions, link targets, HTML tags) blanked out by a byte
// that is neither a letter, a space nor Chinese; lines and byte offsets
// stay where they were.
func masked(s string) string { return mask(s, true) }

// maskFenced is the text with its fenced code blocks and template actions
// blanked, and its code spans kept.
func maskFenced(s string) string { return mask(s, false) }

func mask(s string, spans bool) string {
	b := []byte(s)
	blank := func(from, to int) {
		for i := from; i < to && i < len(b); i++ {
			if b[i] != '\n' {
				b[i] = 1
			}
		}
	}
	// Fenced code blocks, fences included.
	off, in, start := 0, false, 0
	for _, line := range strings.SplitAfter(s, "\n") {
		if fence := strings.HasPrefix(strings.TrimLeft(line, " "), "```") || strings.HasPrefix(strings.TrimLeft(line, " "), "~~~"); fence {
			if !in {
				start = off
			} else {
				blank(start, off+len(line))
			}
			in = !in
		}
		off += len(line)
	}
	if in {
		blank(start, len(b))
	}
	for _, re := range []*regexp.Regexp{templateActionRE, codeSpanRE, linkTargetRE, htmlTagRE} {
		if re == codeSpanRE && !spans {
			continue
		}
		for _, m := range re.FindAllIndex(b, -1) {
			if re == linkTargetRE {
				m[0]++ // keep the ] of the link's text
			}
			blank(m[0], m[1])
		}
	}
	return string(b)
}

var (
	templateActionRE = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	codeSpanRE       = regexp.MustCompile("(?s)``[^`].*?``|`[^`]+`")
	linkTargetRE     = regexp.MustCompile(`\]\([^)\s]*\)`)
	htmlTagRE        = regexp.MustCompile(`</?[a-zA-Z][^>\n]*>`)
)

// codeSpans are the contents of the code spans of a Markdown text, outside
// its fenced code blocks.
func codeSpans(s string) []string {
	var out []string
	for _, c := range codeSpanRE.FindAllString(unfenced(s), -1) {
		out = append(out, strings.TrimSpace(strings.Trim(c, "`")))
	}
	return out
}

// count is how often name occurs in s as a whole word: not inside a
// longer word of letters and digits.
func count(s, name string) int {
	n := 0
	for i := 0; ; {
		j := strings.Index(s[i:], name)
		if j < 0 {
			return n
		}
		at, end := i+j, i+j+len(name)
		if (at == 0 || !isWordByte(s[at-1]) || !isWordByte(name[0])) && (end == len(s) || !isWordByte(s[end]) || !isWordByte(name[len(name)-1])) {
			n++
		}
		i = end
	}
}

// nameAround says whether the word at s[from:to] is part of a name, a
// path, a flag or a field (kube-scheduler, /etc/kubernetes, --namespace,
// spec.nodeName, sandbox_id) rather than a word of the sentence.
func nameAround(s string, from, to int) bool {
	if from > 0 && strings.IndexByte("-./_$=@\\{:", s[from-1]) >= 0 {
		return true
	}
	if to < len(s) && strings.IndexByte("-/_=@(", s[to]) >= 0 {
		return true
	}
	return to+1 < len(s) && (s[to] == '.' || s[to] == ':') && isWordByte(s[to+1])
}

// inGloss says whether s[from:to] is in an English gloss: full-width
// parentheses with nothing Chinese in them, after the Chinese term, as
// rule 4 writes 过滤（Filter）.
func inGloss(s string, from, to int) bool {
	open := strings.LastIndex(s[:from], "（")
	if open < 0 || strings.Contains(s[open:from], "）") {
		return false
	}
	end := strings.Index(s[to:], "）")
	if end < 0 {
		return false
	}
	inside := s[open+len("（") : to+end]
	return !strings.ContainsFunc(inside, func(r rune) bool { return isHan(r) || r == '\n' || strings.ContainsRune("，。：；（", r) })
}

// commandWords are programs whose command lines the texts of lab.yaml
// quote without code spans: an English word after one of them on the same
// line, with nothing Chinese between, is the command's.
var commandWords = regexp.MustCompile(`\b(?:kubectl|crictl|ctr|systemctl|journalctl|ssh|grep|cat|ls|ps|kubeadm|etcdctl|nsenter|runc)\s[^\p{Han}\x{3000}-\x{303f}\x{ff00}-\x{ffef}]*$`)

// hanSpaceRE is Chinese, a space and Chinese again (past Markdown's
// emphasis): 服务器 在, 给 沙箱 分配, 点 **检查**.
var hanSpaceRE = regexp.MustCompile(`\p{Han}+(?:\**[ \t]+\**\p{Han}+)+`)

// unspacedRE is Chinese next to a Latin letter or a digit, with no space
// between: 容器ID.
var unspacedRE = regexp.MustCompile(`\p{Han}[A-Za-z0-9]|[A-Za-z0-9]\p{Han}`)

// punctSpaceRE is a space next to full-width punctuation.
var punctSpaceRE = regexp.MustCompile(`\S\**[ \t]+\**[，。、：；？！（）“”‘’《》「」【】]|[，。、：；？！（）“”‘’《》「」【】]\**[ \t]+\**\S`)

// listMarkerRE is a Markdown list item or quote whose text starts with
// full-width punctuation: the space is Markdown's.
var listMarkerRE = regexp.MustCompile(`^\s*(?:[-*+>]|\d+\.)[ \t]+\S$`)

func isHan(r rune) bool { return unicode.Is(unicode.Han, r) }

// lintZh finds the mistakes in zh, a Chinese text whose English text is
// en ("" when there is none); known are the identifiers the lab names.
func lintZh(zh, en string, known []string) []zhFinding {
	var out []zhFinding
	prose := masked(zh)

	// Glossary forms, each place reported once (OCI Runtime Spec is not
	// also a Spec).
	var taken [][]int
	for _, f := range zhForms {
		for _, m := range f.re.FindAllStringIndex(prose, -1) {
			if slices.ContainsFunc(taken, func(t []int) bool { return m[0] < t[1] && t[0] < m[1] }) {
				continue
			}
			bad := zh[m[0]:m[1]]
			use := f.use
			if use == "" {
				use = strings.ToLower(bad)
				if use == bad {
					continue
				}
			}
			if f.word && (nameAround(prose, m[0], m[1]) || commandWords.MatchString(prose[lineStart(prose, m[0]):m[0]]) || inGloss(prose, m[0], m[1])) {
				continue
			}
			taken = append(taken, m)
			sep := ": "
			if strings.HasPrefix(f.why, "rule ") {
				sep = " "
			}
			out = append(out, zhFinding{m[0], fmt.Sprintf("%q in a Chinese text: write %s (%s%s%s)", bad, use, glossaryFile, sep, f.why), true})
		}
	}

	// Identifiers cut by a translation: the Latin half of a name glued to
	// the Chinese that replaced the rest, in code spans too.
	prose = maskFenced(zh)
	var cut [][]int
	var cutNames []string
	for _, m := range identifierRE.FindAllStringIndex(prose, -1) {
		w := prose[m[0]:m[1]]
		// An acronym (PID, IP) is a word of its own, not a cut name.
		if slices.Contains(known, w) || strings.ToUpper(w) == w {
			continue
		}
		next, _ := utf8.DecodeRuneInString(prose[m[1]:])
		prev, _ := utf8.DecodeLastRuneInString(prose[:m[0]])
		var whole string
		if isHan(next) && (isIdentifier(w) || isLower(w[0])) {
			whole = cutFrom(known, w, true)
		}
		if whole == "" && isHan(prev) && isUpper(w[0]) {
			whole = cutFrom(known, w, false)
		}
		if whole == "" {
			continue
		}
		from, to := m[0], m[1]
		if isHan(next) {
			to += hanRun(prose[to:])
		} else {
			from -= hanRunBefore(prose[:from])
		}
		cut = append(cut, []int{from, to})
		cutNames = append(cutNames, whole)
		out = append(out, zhFinding{from, fmt.Sprintf("%q in a Chinese text: the name %s is cut and half translated; write %s whole, as on the learner's screen (%s rule 4)", zh[from:to], whole, whole, glossaryFile), false})
	}

	prose = masked(zh)

	// Names the English text has and the Chinese one lacks: a camelCase
	// identifier as often as the English has it, a one-word code span at
	// least once (the English may also use its word in a sentence: the
	// `disk` label, a full disk).
	if en != "" {
		enCode, zhCode := unfenced(en), unfenced(zh)
		var names []string
		for _, w := range identifierRE.FindAllString(enCode, -1) {
			if isIdentifier(w) && !slices.Contains(names, w) {
				names = append(names, w)
			}
		}
		identifiers := len(names)
		// A code span is a name when it is one word: a phrase in one
		// (a formula, a message) may be translated.
		for _, c := range codeSpans(en) {
			if !strings.ContainsAny(c, " \t\n") && !slices.Contains(names, c) {
				names = append(names, c)
			}
		}
		for i, name := range names {
			want, got := count(enCode, name), count(zhCode, name)
			// Chinese has no plural: DaemonSets is DaemonSet.
			if singular := strings.TrimSuffix(name, "s"); singular != name && isIdentifier(singular) {
				got += count(zhCode, singular)
			}
			if i >= identifiers {
				want = min(want, 1)
			}
			if got < want && !slices.Contains(cutNames, name) {
				out = append(out, zhFinding{-1, fmt.Sprintf("the English text names %s %s, the Chinese text %s: a name stays as it is in a translation; write %s where the English does (%s rule 4)", name, times(want), times(got), name, glossaryFile), true})
			}
		}
	}

	// Typography: no space between Chinese characters, one between
	// Chinese and Latin letters or digits, none next to full-width
	// punctuation.
	unspaced := strings.NewReplacer(" ", "", "\t", "")
	for _, m := range hanSpaceRE.FindAllStringIndex(prose, -1) {
		bad := zh[m[0]:m[1]]
		out = append(out, zhFinding{m[0], fmt.Sprintf("%q in a Chinese text: no space between two Chinese characters; write %q (%s rule 7)", bad, unspaced.Replace(bad), glossaryFile), true})
	}
	// The matches overlap (NGINX的PID has two), so each is looked for
	// from the second character of the last.
	for i := 0; i < len(prose); {
		loc := unspacedRE.FindStringIndex(prose[i:])
		if loc == nil {
			break
		}
		m := []int{i + loc[0], i + loc[1]}
		r, size := utf8.DecodeRuneInString(prose[m[0]:])
		i = m[0] + size
		if slices.ContainsFunc(cut, func(c []int) bool { return m[0] < c[1] && c[0] < m[1] }) {
			continue // reported as a cut name
		}
		split := m[0] + size
		if !isHan(r) {
			split = m[0] + 1
		}
		from, to := m[0], m[1]
		if isHan(r) {
			from -= hanRunBefore(prose[:from])
			to += wordRun(prose[to:])
		} else {
			from -= wordRunBefore(prose[:from])
			to += hanRun(prose[to:])
		}
		bad := zh[from:to]
		good := zh[from:split] + " " + zh[split:to]
		out = append(out, zhFinding{from, fmt.Sprintf("%q in a Chinese text: a space between Chinese and Latin letters or digits; write %q (%s rule 7)", bad, good, glossaryFile), true})
	}
	for _, m := range punctSpaceRE.FindAllStringIndex(prose, -1) {
		if listMarkerRE.MatchString(prose[lineStart(prose, m[0]):m[0]] + prose[m[0]:m[1]]) {
			continue
		}
		from := m[0] - max(hanRunBefore(prose[:m[0]]), wordRunBefore(prose[:m[0]]))
		to := m[1] + max(hanRun(prose[m[1]:]), wordRun(prose[m[1]:]))
		bad := zh[from:to]
		out = append(out, zhFinding{from, fmt.Sprintf("%q in a Chinese text: no space next to full-width punctuation; write %q (%s rule 7)", bad, unspaced.Replace(bad), glossaryFile), true})
	}
	// ASCII quotes around Chinese, or next to it: “…” instead. Quotes
	// pair up within a paragraph; a command's quotes ("Ready", "...")
	// touch no Chinese.
	for _, para := range paragraphs(prose) {
		var quotes []int
		for i := para[0]; i < para[1]; i++ {
			if prose[i] == '"' {
				quotes = append(quotes, i)
			}
		}
		for len(quotes) > 0 {
			a := quotes[0]
			b := -1
			if len(quotes) > 1 {
				b = quotes[1]
			}
			touches := func(i int) bool {
				prev, _ := utf8.DecodeLastRuneInString(prose[:i])
				next, _ := utf8.DecodeRuneInString(prose[i+1:])
				return isHan(prev) || isHan(next)
			}
			switch {
			case b >= 0 && (touches(a) || touches(b) || strings.ContainsFunc(prose[a:b], isHan)):
				out = append(out, zhFinding{a, fmt.Sprintf("ASCII quotes in a Chinese text, %s: write “%s”; ASCII quotes only in code (%s rule 7)", zh[a:b+1], zh[a+1:b], glossaryFile), true})
			case b < 0 && touches(a):
				out = append(out, zhFinding{a, fmt.Sprintf("an ASCII quote in %q in a Chinese text: a Chinese sentence quotes with “…”; ASCII quotes only in code (%s rule 7)", zh[a-hanRunBefore(prose[:a]):a+1+hanRun(prose[a+1:])], glossaryFile), true})
			}
			quotes = quotes[min(2, len(quotes)):]
		}
	}
	slices.SortStableFunc(out, func(a, b zhFinding) int { return a.off - b.off })
	return out
}

func times(n int) string {
	switch n {
	case 0:
		return "nowhere"
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// cutFrom is the known identifier that w is the start of (start) or the
// end of, cut where a new word of the identifier begins: RunPod of
// RunPodSandbox, Namespace of shareProcessNamespace.
func cutFrom(known []string, w string, start bool) string {
	for _, k := range known {
		if len(k) <= len(w) {
			continue
		}
		if start && strings.HasPrefix(k, w) && isUpper(k[len(w)]) {
			return k
		}
		if !start && strings.HasSuffix(k, w) && isLower(k[len(k)-len(w)-1]) {
			return k
		}
	}
	return ""
}

// hanRun is the length in bytes of the Chinese characters s starts with.
func hanRun(s string) int { return len(s) - len(strings.TrimLeftFunc(s, isHan)) }

// hanRunBefore is the length in bytes of the Chinese characters s ends with.
func hanRunBefore(s string) int { return len(s) - len(strings.TrimRightFunc(s, isHan)) }

// wordRun is the length of the letters and digits s starts with.
func wordRun(s string) int {
	n := 0
	for n < len(s) && isWordByte(s[n]) {
		n++
	}
	return n
}

// wordRunBefore is the length of the letters and digits s ends with.
func wordRunBefore(s string) int {
	n := 0
	for n < len(s) && isWordByte(s[len(s)-1-n]) {
		n++
	}
	return n
}

// paragraphs are the byte ranges of the text's paragraphs, which blank
// lines part.
func paragraphs(s string) [][2]int {
	var out [][2]int
	start := 0
	for {
		i := strings.Index(s[start:], "\n\n")
		if i < 0 {
			return append(out, [2]int{start, len(s)})
		}
		out = append(out, [2]int{start, start + i})
		start += i + 2
	}
}

func lineStart(s string, off int) int {
	return strings.LastIndexByte(s[:off], '\n') + 1
}

// unfenced is a Markdown text without its fenced code blocks, which are
// the English file's byte for byte (TestBuiltinTranslationsKeepCode).
func unfenced(s string) string {
	var out []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		if t := strings.TrimLeft(line, " "); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			in = !in
			continue
		}
		if !in {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// chinese lints the lab's Chinese texts (see the top of this file).
func (v *validator) chinese() {
	known := slices.Clone(knownIdentifiers)
	addNames := func(s string) {
		for _, w := range identifierRE.FindAllString(s, -1) {
			if isIdentifier(w) && !slices.Contains(known, w) {
				known = append(known, w)
			}
		}
	}
	type mdText struct{ name, zh, en string }
	var md []mdText
	read := func(base string) {
		zh, err := v.lab.Files(base + ".zh.md")
		if err != nil {
			return
		}
		en, _ := v.lab.Files(base + ".en.md")
		md = append(md, mdText{base + ".zh.md", string(zh), string(en)})
		addNames(string(en))
	}
	read("intro")
	for _, s := range v.lab.Steps {
		if idRE.MatchString(s.ID) {
			read("steps/" + s.ID)
		}
	}
	type yamlText struct {
		where  []any
		zh, en *yaml.Node
	}
	var texts []yamlText
	walkTexts(document(v.root), nil, func(where []any, zh, en *yaml.Node) {
		texts = append(texts, yamlText{where, zh, en})
		if en != nil && en.Kind == yaml.ScalarNode {
			addNames(en.Value)
		}
	})
	// Shortest first, so that a cut name is matched with the name it is
	// most of.
	slices.SortStableFunc(known, func(a, b string) int { return len(a) - len(b) })
	for _, t := range texts {
		en := ""
		if t.en != nil && t.en.Kind == yaml.ScalarNode {
			en = t.en.Value
		}
		where := append(slices.Clip(t.where), "zh")
		for _, f := range lintZh(t.zh.Value, en, known) {
			v.zhProblem(Problem{File: v.file, Line: yamlLine(t.zh, f.off), Field: pathString(where), Message: f.msg}, f.lenient)
		}
	}
	for _, t := range md {
		for _, f := range lintZh(t.zh, t.en, known) {
			line := 0
			if f.off >= 0 {
				line = 1 + strings.Count(t.zh[:f.off], "\n")
			}
			v.zhProblem(Problem{File: v.display(t.name), Line: line, Message: f.msg}, f.lenient)
		}
	}
}

// yamlLine is the line of byte off of a text in lab.yaml: exact in a
// literal block (|), else the line the text starts on.
func yamlLine(n *yaml.Node, off int) int {
	switch {
	case n.Style == yaml.LiteralStyle && off >= 0:
		return n.Line + 1 + strings.Count(n.Value[:off], "\n")
	case n.Style == yaml.LiteralStyle, n.Style == yaml.FoldedStyle:
		return n.Line + 1
	}
	return n.Line
}

// zhProblem records a finding of the Chinese lints: a problem, or a
// warning when it is lenient.
func (v *validator) zhProblem(p Problem, lenient bool) {
	for _, b := range v.broken {
		if p.Field != "" && b.covers(p.Field) {
			return
		}
	}
	if lenient {
		p.Warning = true
		v.warnings = append(v.warnings, p)
		return
	}
	v.problems = append(v.problems, p)
}

// chineseTrack lints a track's Chinese title and description as chinese
// does a lab's texts; a track has no warnings, so a lenient finding is a
// problem of the built-in track (strict) and is not reported otherwise.
func (d *trackDecoder) chinese(doc *yaml.Node, strict bool) {
	walkTexts(doc, nil, func(where []any, zh, en *yaml.Node) {
		enText := ""
		if en != nil && en.Kind == yaml.ScalarNode {
			enText = en.Value
		}
		for _, f := range lintZh(zh.Value, enText, knownIdentifiers) {
			if f.lenient && !strict {
				continue
			}
			d.at(yamlLine(zh, f.off), pathString(append(slices.Clip(where), "zh")), "%s", f.msg)
		}
	})
}

// walkTexts calls fn for every text in lab.yaml with a Chinese version: a
// map with zh: (a string) and, usually, en:.
func walkTexts(n *yaml.Node, where []any, fn func(where []any, zh, en *yaml.Node)) {
	if n == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		var zh, en *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			switch k.Value {
			case "zh":
				zh = val
			case "en":
				en = val
			default:
				walkTexts(val, append(slices.Clip(where), k.Value), fn)
			}
		}
		if zh != nil && zh.Kind == yaml.ScalarNode && zh.ShortTag() == "!!str" {
			fn(where, zh, en)
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			walkTexts(c, append(slices.Clip(where), i), fn)
		}
	}
}
