package grader

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/jsonpath"

	"github.com/podpath/podpath/labs"
)

// read runs a probe and returns what it read.
func (g *Grader) read(ctx context.Context, p *labs.Probe, answer string) (value, error) {
	switch {
	case p.Kube != nil:
		return g.readKube(ctx, p.Kube)
	case p.NodeCondition != nil:
		return g.readNodeCondition(ctx, p.NodeCondition)
	case p.Events != nil:
		return g.readEvents(ctx, p.Events)
	case p.Command != nil:
		out, _, code, err := g.nodeShell(ctx, p.Command.Node, p.Command.Run, nil)
		if err != nil {
			return value{}, err
		}
		if p.Command.Output == "exitCode" {
			return readValue(NoteValue, strconv.Itoa(code)), nil
		}
		return readValue(NoteValue, strings.TrimSpace(out)), nil
	case p.File != nil:
		out, _, code, err := g.nodeShell(ctx, p.File.Node, "cat -- "+labs.ShellQuote(p.File.Path), nil)
		if err != nil {
			return value{}, err
		}
		if code != 0 {
			return nothing(NoteNoFile, "path", p.File.Path, "node", p.File.Node), nil
		}
		return readValue(NoteValue, strings.TrimSpace(out)), nil
	case p.Crictl != nil:
		return g.readCrictl(ctx, p.Crictl)
	case p.Unit != nil:
		out, _, _, err := g.nodeShell(ctx, p.Unit.Node, "systemctl show -p ActiveState --value -- "+labs.ShellQuote(p.Unit.Unit), nil)
		if err != nil {
			return value{}, err
		}
		return readValue(NoteUnit, strings.TrimSpace(out), "node", p.Unit.Node, "unit", p.Unit.Unit), nil
	case p.History != nil:
		return g.readHistory(ctx, p.History, stepSince(ctx))
	case p.Answer != nil:
		return readValue(NoteAnswer, strings.TrimSpace(answer)), nil
	case p.Script != nil:
		o := g.script(ctx, p.Script)
		if o.probeErr {
			return value{}, &readError{obs: o.obs}
		}
		return readValue(NoteValue, strconv.FormatBool(o.passed)), nil
	}
	return value{}, fmt.Errorf("a check has no probe")
}

// resourceFor maps what kubectl accepts (pods, po, deployments.apps, svc)
// to a resource and says whether it is namespaced.
func (g *Grader) resourceFor(ctx context.Context, c *clients, resource string) (schema.GroupVersionResource, bool, error) {
	expander := restmapper.NewShortcutExpander(c.mapper, c.core.Discovery(), nil)
	arg := schema.ParseGroupResource(resource)
	gvr, err := expander.ResourceFor(arg.WithVersion(""))
	if err != nil {
		c.mapper.Reset()
		if gvr, err = expander.ResourceFor(arg.WithVersion("")); err != nil {
			return gvr, false, failed(NoteNoResource, "resource", resource)
		}
	}
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return gvr, false, failed(NoteNoAPI, "detail", err.Error())
	}
	mapping, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return gvr, false, failed(NoteNoAPI, "detail", err.Error())
	}
	return gvr, mapping.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (g *Grader) readKube(ctx context.Context, k *labs.KubeProbe) (value, error) {
	c, err := g.kube(ctx)
	if err != nil {
		return value{}, err
	}
	gvr, namespaced, err := g.resourceFor(ctx, c, k.Resource)
	if err != nil {
		return value{}, err
	}
	var r dynamic.ResourceInterface = c.dynamic.Resource(gvr)
	ns := k.Namespace
	if namespaced {
		if ns == "" {
			ns = "default"
		}
		r = c.dynamic.Resource(gvr).Namespace(ns)
	} else {
		ns = ""
	}
	var data any
	if k.Name != "" {
		u, err := r.Get(ctx, k.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nothing(NoteNoObject, "resource", k.Resource, "name", k.Name, "namespace", ns), nil
		}
		if err != nil {
			return value{}, failed(NoteReadFailed, "resource", k.Resource, "name", k.Name, "detail", err.Error())
		}
		data = u.Object
	} else {
		l, err := r.List(ctx, metav1.ListOptions{LabelSelector: k.Selector, FieldSelector: k.FieldSelector})
		if err != nil {
			return value{}, failed(NoteListFailed, "resource", k.Resource, "detail", err.Error())
		}
		items := make([]any, 0, len(l.Items))
		for _, it := range l.Items {
			items = append(items, it.Object)
		}
		data = map[string]any{"kind": "List", "items": items}
	}
	s, err := applyJSONPath(k.JSONPath, data)
	if err != nil {
		return value{}, err
	}
	return readValue(NoteValue, s), nil
}

func applyJSONPath(expr string, data any) (string, error) {
	jp := jsonpath.New("probe").AllowMissingKeys(true)
	if err := jp.Parse(expr); err != nil {
		return "", failed(NoteJSONPath, "jsonpath", expr, "detail", err.Error())
	}
	var buf bytes.Buffer
	if err := jp.Execute(&buf, data); err != nil {
		return "", failed(NoteJSONPath, "jsonpath", expr, "detail", err.Error())
	}
	return strings.TrimSpace(buf.String()), nil
}

func (g *Grader) readNodeCondition(ctx context.Context, p *labs.NodeConditionProbe) (value, error) {
	c, err := g.kube(ctx)
	if err != nil {
		return value{}, err
	}
	n, err := c.core.CoreV1().Nodes().Get(ctx, p.Node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nothing(NoteNoNode, "node", p.Node), nil
	}
	if err != nil {
		return value{}, failed(NoteReadFailed, "resource", "Node", "name", p.Node, "detail", err.Error())
	}
	for _, cond := range n.Status.Conditions {
		if string(cond.Type) == p.Type {
			return readValue(NoteCondition, string(cond.Status), "node", p.Node, "type", p.Type), nil
		}
	}
	return nothing(NoteNoCondition, "node", p.Node, "type", p.Type), nil
}

// readEvents lists an object's events oldest first, one line per event.
func (g *Grader) readEvents(ctx context.Context, p *labs.EventsProbe) (value, error) {
	c, err := g.kube(ctx)
	if err != nil {
		return value{}, err
	}
	ns := p.Namespace
	if ns == "" {
		ns = "default"
	}
	uid := p.UID
	if p.UIDOf != nil {
		var none *value
		if uid, none, err = g.uidOf(ctx, c, p); err != nil || none != nil {
			if none == nil {
				return value{}, err
			}
			return *none, err
		}
	}
	selector := "involvedObject.kind=" + p.Kind
	if !strings.HasSuffix(p.Name, "*") {
		selector += ",involvedObject.name=" + p.Name
	}
	if uid != "" {
		selector += ",involvedObject.uid=" + uid
	}
	if p.Reason != "" {
		selector += ",reason=" + p.Reason
	}
	list, err := c.core.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		return value{}, failed(NoteListFailed, "resource", "events", "detail", err.Error())
	}
	return readValue(NoteEvents, eventLines(list.Items, p, uid)), nil
}

// uidOf finds the UID of the object an events probe's uidOf names, as it
// is now; none, when there is no such object, is what the probe reads.
func (g *Grader) uidOf(ctx context.Context, c *clients, p *labs.EventsProbe) (uid string, none *value, err error) {
	ref := *p.UIDOf
	if ref.Namespace == "" {
		ref.Namespace = p.Namespace
	}
	if ref.Name == "" {
		ref.Name = p.Name
	}
	gvr, namespaced, err := g.resourceFor(ctx, c, ref.Resource)
	if err != nil {
		return "", nil, err
	}
	var r dynamic.ResourceInterface = c.dynamic.Resource(gvr)
	if namespaced {
		if ref.Namespace == "" {
			ref.Namespace = "default"
		}
		r = c.dynamic.Resource(gvr).Namespace(ref.Namespace)
	} else {
		ref.Namespace = ""
	}
	u, err := r.Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		v := nothing(NoteNoEventsObject, "resource", ref.Resource, "name", ref.Name, "namespace", ref.Namespace)
		return "", &v, nil
	}
	if err != nil {
		return "", nil, failed(NoteReadFailed, "resource", ref.Resource, "name", ref.Name, "detail", err.Error())
	}
	return string(u.GetUID()), nil, nil
}

// eventLines writes the events of p's object (of the object with uid,
// when set) one per line as p.Field says: oldest first, or only the
// newest with pick: latest.
func eventLines(items []corev1.Event, p *labs.EventsProbe, uid string) string {
	prefix, isPrefix := strings.CutSuffix(p.Name, "*")
	var events []corev1.Event
	for _, e := range items {
		if e.InvolvedObject.Kind != p.Kind || (p.Reason != "" && e.Reason != p.Reason) || (uid != "" && string(e.InvolvedObject.UID) != uid) {
			continue
		}
		if (isPrefix && !strings.HasPrefix(e.InvolvedObject.Name, prefix)) || (!isPrefix && e.InvolvedObject.Name != p.Name) {
			continue
		}
		events = append(events, e)
	}
	sort.SliceStable(events, func(i, j int) bool {
		return before(eventTime(&events[i]), eventTime(&events[j]), &events[i], &events[j])
	})
	if p.Pick == "latest" && len(events) > 0 {
		latest := events[0]
		for _, e := range events[1:] {
			if !before(lastSeen(&e), lastSeen(&latest), &e, &latest) {
				latest = e
			}
		}
		events = []corev1.Event{latest}
	}
	var lines []string
	for _, e := range events {
		component := e.ReportingController
		if component == "" {
			component = e.Source.Component
		}
		switch p.Field {
		case "component":
			lines = append(lines, component)
		case "message":
			lines = append(lines, e.Message)
		case "reason component":
			lines = append(lines, e.Reason+" "+component)
		default:
			lines = append(lines, e.Reason)
		}
	}
	return strings.Join(lines, "\n")
}

// before orders two events by time, then by the order the API server
// stored them in.
func before(ti, tj time.Time, a, b *corev1.Event) bool {
	if !ti.Equal(tj) {
		return ti.Before(tj)
	}
	ra, _ := strconv.ParseInt(a.ResourceVersion, 10, 64)
	rb, _ := strconv.ParseInt(b.ResourceVersion, 10, 64)
	return ra < rb
}

// lastSeen is when an event last happened: an event repeated (BackOff,
// FailedMount) keeps its first time and moves its last one.
func lastSeen(e *corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	}
	return eventTime(e)
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	case !e.FirstTimestamp.IsZero():
		return e.FirstTimestamp.Time
	}
	return e.CreationTimestamp.Time
}

func (g *Grader) readCrictl(ctx context.Context, p *labs.CrictlProbe) (value, error) {
	out, errOut, code, err := g.nodeShell(ctx, p.Node, "crictl "+p.Command, nil)
	if err != nil {
		return value{}, err
	}
	if code != 0 {
		return nothing(NoteCrictlFailed, "command", p.Command, "node", p.Node, "error", strings.TrimSpace(errOut)), nil
	}
	var data any
	if err := json.Unmarshal([]byte(out), &data); err != nil {
		return value{}, failed(NoteNoJSON, "command", p.Command, "output", shorten(strings.TrimSpace(out)))
	}
	s, err := applyJSONPath(p.JSONPath, data)
	if err != nil {
		return value{}, err
	}
	return readValue(NoteValue, s), nil
}

// HistoryFile is where the node image's shell profile keeps root's history.
const HistoryFile = "/root/.bash_history"

func (g *Grader) readHistory(ctx context.Context, p *labs.HistoryProbe, since time.Time) (value, error) {
	re, err := regexp.Compile(p.Matches)
	if err != nil {
		return value{}, err
	}
	out, _, code, err := g.nodeShell(ctx, p.Node, "cat "+HistoryFile, nil)
	if err != nil {
		return value{}, err
	}
	if code != 0 {
		return nothing(NoteNoHistory, "node", p.Node), nil
	}
	var hits []string
	for _, c := range historyCommands(out, since) {
		if re.MatchString(c) {
			hits = append(hits, c)
		}
	}
	if len(hits) == 0 {
		if since.IsZero() {
			return nothing(NoteNoMatch, "node", p.Node), nil
		}
		return nothing(NoteNoMatch, "node", p.Node, "since", "step"), nil
	}
	return readValue(NoteHistory, strings.Join(hits, "\n")), nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// script runs the escape hatch: exit 0 passes; "FAIL:" lines are feedback.
func (g *Grader) script(ctx context.Context, p *labs.ScriptProbe) outcome {
	out, errOut, code, err := g.nodeShell(ctx, p.Node, p.Script, nil)
	if err != nil {
		return outcome{obs: errorObservation(err), probeErr: true}
	}
	obs := readValue(NoteScript, strconv.Itoa(code)).obs
	if t := strings.TrimSpace(out); t != "" {
		obs.Args = map[string]string{"output": lastLines(t, 5)}
	}
	feedback := scriptFeedback(out + "\n" + errOut)
	if p.Feedback == labs.FeedbackOutput && code != 0 {
		// A Killercoda verify script talks to the learner in whatever
		// it prints, on either stream.
		if t := strings.TrimSpace(strings.TrimSpace(out) + "\n" + strings.TrimSpace(errOut)); t != "" {
			feedback = labs.Text{"en": lastLines(t, 10)}
		}
	}
	return outcome{passed: code == 0, obs: obs, feedback: feedback}
}

// failLineRE is a script's line of feedback: "FAIL: text" (English), or
// "FAIL[zh]: text" in the language named.
var failLineRE = regexp.MustCompile(`^FAIL(?:\[([A-Za-z]{2,3}(?:-[A-Za-z0-9]+)?)\])?:(.*)$`)

// scriptFeedback gathers the FAIL: lines of a script's output by language,
// in the order printed. A language without lines of its own shows the
// English ones (labs.Text.In); a script that printed only FAIL[zh]: lines
// shows them in English too, rather than nothing.
func scriptFeedback(output string) labs.Text {
	lines := map[string][]string{}
	for _, line := range strings.Split(output, "\n") {
		m := failLineRE.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		lang := strings.ToLower(m[1])
		if lang == "" {
			lang = "en"
		}
		lines[lang] = append(lines[lang], strings.TrimSpace(m[2]))
	}
	if len(lines) == 0 {
		return nil
	}
	t := labs.Text{}
	for lang, ls := range lines {
		t[lang] = strings.Join(ls, "\n")
	}
	if _, ok := t["en"]; !ok {
		langs := make([]string, 0, len(t))
		for lang := range t {
			langs = append(langs, lang)
		}
		sort.Strings(langs)
		t["en"] = t[langs[0]]
	}
	return t
}

// mergeText joins texts line by line in each language any of them has;
// each text falls back to its English where it lacks the language.
func mergeText(texts []labs.Text) labs.Text {
	langs := map[string]bool{}
	for _, t := range texts {
		for lang := range t {
			langs[lang] = true
		}
	}
	out := labs.Text{}
	for lang := range langs {
		var lines []string
		for _, t := range texts {
			if s := t.In(lang); s != "" {
				lines = append(lines, s)
			}
		}
		if len(lines) > 0 {
			out[lang] = strings.Join(lines, "\n")
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
