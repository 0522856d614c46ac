package grader

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/podpath/podpath/labs"
)

// Note is the kind of an observation: a value a probe read, why there was
// none, a matcher's or a combinator's verdict on what it judged, or why a
// probe could not read.
type Note string

// What a probe read. Value holds it; a lab's readings (observed:) say it.
const (
	NoteValue     Note = "value"     // a kube, crictl, command or file probe's value
	NoteAnswer    Note = "answer"    // the learner's typed answer
	NoteEvents    Note = "events"    // an events probe's lines
	NoteHistory   Note = "history"   // the commands a history probe found; never empty
	NoteUnit      Note = "unit"      // a unit's ActiveState; args node, unit
	NoteCondition Note = "condition" // a Node condition's status; args node, type
	NoteScript    Note = "script"    // a script's exit code; args code, output
)

// Why a probe read nothing there. Args name what is missing.
const (
	NoteNoObject       Note = "noObject"       // resource, name, namespace ("" when cluster-scoped)
	NoteNoEventsObject Note = "noEventsObject" // resource, name, namespace
	NoteNoFile         Note = "noFile"         // path, node
	NoteNoNode         Note = "noNode"         // node
	NoteNoCondition    Note = "noCondition"    // node, type
	NoteCrictlFailed   Note = "crictlFailed"   // command, node, error
	NoteNoHistory      Note = "noHistory"      // node
	NoteNoMatch        Note = "noMatch"        // node, since ("step" when counted since the step began)
)

// What a matcher says of the value it judged (Of[0]).
const (
	NoteNotNumber     Note = "notNumber"
	NoteNotQuantity   Note = "notQuantity"
	NoteCount         Note = "count"         // n: how many values
	NoteCannotCompare Note = "cannotCompare" // Of[1]: why the other probe read nothing
	NoteNothingYet    Note = "nothingYet"    // the other probe read an empty value
	NoteSame          Note = "same"          // sameAs: the same as the other probe's value
	NoteNotSame       Note = "notSame"       // sameAs: not the same
	NoteNotDifferent  Note = "notDifferent"  // differsFrom: the same
	NoteDifferent     Note = "different"     // differsFrom: differs; arg other (in Raw only)
)

// What within and holds say of a judgement (Of[0]); args after, for.
const (
	NoteStillAfter Note = "stillAfter"
	NoteNotWaited  Note = "notWaited"
	NoteDidNotHold Note = "didNotHold"
	NoteCancelled  Note = "cancelled"
)

// What allOf, anyOf and not say of their parts (Of); arg index is 1-based.
const (
	NoteAllOfPassed  Note = "allOfPassed"
	NoteAllOfFailed  Note = "allOfFailed" // Of[0]: the part that failed
	NoteAnyOfPassed  Note = "anyOfPassed" // Of[0]: the part that passed
	NoteAnyOfNone    Note = "anyOfNone"
	NoteNotRejected  Note = "notRejected" // the condition read a value and rejected it: a pass
	NoteNotAccepted  Note = "notAccepted"
	NoteNotUndecided Note = "notUndecided"
	NoteNotError     Note = "notError"
)

// Why a probe could not read: the check does not pass, and says this.
const (
	NoteNoAPI          Note = "noAPI"          // detail
	NoteNoResource     Note = "noResource"     // resource
	NoteReadFailed     Note = "readFailed"     // resource, name, detail
	NoteListFailed     Note = "listFailed"     // resource, detail
	NoteJSONPath       Note = "jsonpath"       // jsonpath, detail
	NoteOutputTooLarge Note = "outputTooLarge" // node, mib
	NoteExecFailed     Note = "execFailed"     // node, detail
	NoteTimedOut       Note = "timedOut"       // node
	NoteNoJSON         Note = "noJSON"         // command, output
	NoteCheckError     Note = "checkError"     // detail: the check itself is wrong
)

// Observation is what a check observed, as data: a note and the values it
// names, and the observations it speaks of. Raw says it in the grader's own
// English, kept with the attempt for instructors and debugging; Words says
// it to a learner in a language, with the lab's readings of the values read.
type Observation struct {
	Note  Note              `json:"note"`
	Value string            `json:"value,omitempty"`
	Args  map[string]string `json:"args,omitempty"`
	Of    []Observation     `json:"of,omitempty"`
	// Readings are how the lab says Value (the condition's observed:).
	Readings []labs.Reading `json:"-"`
}

func note(n Note, args ...string) Observation {
	o := Observation{Note: n}
	if len(args) > 0 {
		o.Args = map[string]string{}
		for i := 0; i+1 < len(args); i += 2 {
			o.Args[args[i]] = args[i+1]
		}
	}
	return o
}

// about is note n on what of says, with args.
func about(n Note, of Observation, args ...string) Observation {
	o := note(n, args...)
	o.Of = []Observation{of}
	return o
}

// readError is a probe that could not read; its message is the
// observation's Raw.
type readError struct{ obs Observation }

func (e *readError) Error() string { return e.obs.Raw() }

func failed(n Note, args ...string) error { return &readError{obs: note(n, args...)} }

// errorObservation is what a check shows for err: the observation of a
// probe that could not read, or (for any other error) a check that is
// itself wrong.
func errorObservation(err error) Observation {
	var re *readError
	if errors.As(err, &re) {
		return re.obs
	}
	return note(NoteCheckError, "detail", err.Error())
}

// raw is the language Raw is said in: the grader's English, as recorded.
const raw = "raw"

// Raw is the observation in the grader's English: what the probe read, with
// its notes in parentheses. It is kept with the attempt, not shown to a
// learner.
func (o Observation) Raw() string { return o.say(raw) }

// Words is the observation as a learner reads it in lang: the lab's
// readings for the values read, and podpath's own words for the rest.
// A language podpath has no words in gets English.
func (o Observation) Words(lang string) string {
	if lang != "zh" {
		lang = "en"
	}
	return o.say(lang)
}

// Text is Words in every language a lab may have.
func (o Observation) Text() labs.Text {
	t := labs.Text{}
	for _, lang := range labs.Languages {
		t[lang] = shorten(o.Words(lang))
	}
	return t
}

func pick(lang, rawText, en, zh string) string {
	switch lang {
	case raw:
		return rawText
	case "zh":
		return zh
	}
	return en
}

// fill puts o's args, its value and what its first Of says into t.
func (o Observation) fill(t, lang string) string {
	args := map[string]string{"value": o.Value}
	for k, v := range o.Args {
		args[k] = v
	}
	if len(o.Of) > 0 {
		args["of"] = o.Of[0].say(lang)
	}
	if len(o.Of) > 1 {
		args["other"] = o.Of[1].say(lang)
	}
	if lang != raw {
		for _, k := range []string{"after", "for"} {
			if d, err := time.ParseDuration(args[k]); err == nil {
				args[k] = spokenDuration(d, lang)
			}
		}
	}
	return labs.FillPlaceholders(t, args)
}

func (o Observation) say(lang string) string {
	a := o.Args
	if a == nil {
		a = map[string]string{}
	}
	if lang != raw && len(o.Readings) > 0 {
		// A lab's reading of the value read comes first.
		switch o.Note {
		case NoteValue, NoteAnswer, NoteEvents, NoteHistory, NoteUnit, NoteCondition, NoteScript:
			if s, ok := labs.Say(o.Readings, o.Value, lang); ok {
				return s
			}
		}
	}
	switch o.Note {
	case NoteValue, NoteAnswer, NoteEvents, NoteHistory:
		if lang == raw {
			if o.Value == "" {
				return "(empty)"
			}
			return o.Value
		}
		v := lines(o.Value, lang)
		switch {
		case o.Note == NoteAnswer && v == "":
			return pick(lang, "", "no answer yet", "还没有填写答案")
		case o.Note == NoteAnswer:
			return pick(lang, "", `your answer "`+v+`"`, "你的答案“"+v+"”")
		case o.Note == NoteEvents && v == "":
			return pick(lang, "", "no such event yet", "还没有这样的事件")
		case o.Note == NoteHistory:
			return pick(lang, "", "you ran: ", "你运行过：") + v
		case v == "":
			return pick(lang, "", "nothing", "什么也没有")
		}
		return v
	case NoteUnit:
		if o.Value == "" {
			return o.fill(pick(lang, "(empty)", "{unit} on {node} shows no state", "{node} 上的 {unit} 没有状态"), lang)
		}
		return o.fill(pick(lang, "{value}", "{unit} on {node} is {value}", "{node} 上的 {unit} 处于 {value} 状态"), lang)
	case NoteCondition:
		return o.fill(pick(lang, "{value}", "{node}'s {type} condition is {value}", "{node} 的 {type} 状况为 {value}"), lang)
	case NoteScript:
		if lang == raw {
			if a["output"] != "" {
				return "exit " + o.Value + ": " + a["output"]
			}
			return "exit " + o.Value
		}
		if o.Value == "0" {
			return pick(lang, "", "every test of the check passed", "这项检查的各项测试都通过了")
		}
		return o.fill(pick(lang, "", "a test of the check failed (exit code {value})", "这项检查有一项测试没有通过（退出码 {value}）"), lang)

	case NoteNoObject, NoteNoEventsObject:
		t := ""
		switch {
		case a["namespace"] != "":
			t = pick(lang, `(no {resource} "{name}" in namespace {namespace}`, `there is no {resource} "{name}" in namespace {namespace}`, "{namespace} 名字空间中没有 {resource} “{name}”")
		default:
			t = pick(lang, `(no {resource} "{name}"`, `there is no {resource} "{name}"`, "没有 {resource} “{name}”")
		}
		if o.Note == NoteNoEventsObject {
			t += pick(lang, ", so no events of it", ", so no events of it", "，也就没有它的事件")
		}
		if lang == raw {
			t += ")"
		}
		return o.fill(t, lang)
	case NoteNoFile:
		return o.fill(pick(lang, "(no file {path} on {node})", "there is no file {path} on {node}", "{node} 上没有文件 {path}"), lang)
	case NoteNoNode:
		return o.fill(pick(lang, "(no Node {node})", "there is no Node {node}", "没有 Node 对象 {node}"), lang)
	case NoteNoCondition:
		return o.fill(pick(lang, "(Node {node} has no {type} condition)", "Node {node} has no {type} condition", "Node {node} 没有 {type} 状况"), lang)
	case NoteCrictlFailed:
		return o.fill(pick(lang, "(crictl {command} failed on {node}: {error})", "crictl {command} failed on {node}: {error}", "crictl {command} 在 {node} 上执行失败：{error}"), lang)
	case NoteNoHistory:
		return o.fill(pick(lang, "(no commands typed on {node} yet)", "no command has been typed on {node} yet", "{node} 上还没有输入过命令"), lang)
	case NoteNoMatch:
		if a["since"] == "step" {
			return o.fill(pick(lang, "(no command run on {node} since this step began matches)", "no matching command has run on {node} since this step began", "这一步开始以来，{node} 上还没有运行过相符的命令"), lang)
		}
		return o.fill(pick(lang, "(no command run on {node} matches)", "no matching command has run on {node}", "{node} 上还没有运行过相符的命令"), lang)

	case NoteNotNumber:
		return o.fill(pick(lang, "{of} (not a number)", "{of}, which is not a number", "{of}，这不是数字"), lang)
	case NoteNotQuantity:
		return o.fill(pick(lang, "{of} (not a quantity)", "{of}, which is not a Kubernetes quantity", "{of}，这不是 Kubernetes 的资源数量写法"), lang)
	case NoteCount:
		if lang == raw {
			return a["n"] + " (" + shorten(o.Of[0].say(raw)) + ")"
		}
		if len(o.Of) > 0 && len(o.Of[0].Readings) > 0 {
			if s, ok := labs.Say(o.Of[0].Readings, o.Of[0].Value, lang); ok {
				return s
			}
		}
		if a["n"] == "0" {
			return pick(lang, "", "none", "一个也没有")
		}
		return o.fill(pick(lang, "", "{n} values: {of}", "{n} 个值：{of}"), lang)
	case NoteCannotCompare:
		return o.fill(pick(lang, "cannot compare: {other}", "nothing to compare it with: {other}", "无从比较：{other}"), lang)
	case NoteNothingYet:
		return o.fill(pick(lang, "{of} (the cluster shows nothing to compare with yet)", "{of}, but the cluster shows nothing to compare it with yet", "{of}，但集群中还没有可以与之比较的值"), lang)
	case NoteSame:
		if o.ofAnswer() {
			return o.fill(pick(lang, "{of} (matches the cluster)", "{of} matches what your cluster shows", "{of}与你的集群中的一致"), lang)
		}
		return o.fill(pick(lang, "{of} (matches the cluster)", "{of}, as it should be", "{of}，符合要求"), lang)
	case NoteNotSame:
		if o.ofAnswer() {
			return o.fill(pick(lang, "{of} (does not match what the cluster shows)", "{of} does not match what your cluster shows", "{of}与你的集群中的不一致"), lang)
		}
		return o.fill(pick(lang, "{of} (does not match what the cluster shows)", "{of}, which is not what it should be", "{of}，与应有的值不一致"), lang)
	case NoteNotDifferent:
		return o.fill(pick(lang, "{of} (the same as the value it must differ from)", "{of}, the same as the value it must differ from", "{of}，与它本应不同的那个值相同"), lang)
	case NoteDifferent:
		return o.fill(pick(lang, "{of} (differs, as it should: {other})", "{of}, which differs, as it should", "{of}，与对照的值不同，符合要求"), lang)

	case NoteStillAfter:
		return o.fill(pick(lang, "{of} (still after {after})", "{of} (still, after {after})", "{of}（等了 {after}，仍是如此）"), lang)
	case NoteNotWaited:
		return o.fill(pick(lang, "{of} (not waited for: another check of this step failed)", "{of} (not waited for: another check of this step failed)", "{of}（没有再等：这一步的另一项检查没有通过）"), lang)
	case NoteDidNotHold:
		return o.fill(pick(lang, "{of} (it did not hold for {for})", "{of} (it did not hold for {for})", "{of}（没能保持 {for}）"), lang)
	case NoteCancelled:
		return pick(lang, "the check was cancelled", "the check was cancelled", "检查被取消了")

	case NoteAllOfPassed:
		if lang == raw {
			return fmt.Sprintf("all %d of allOf passed: %s", len(o.Of), o.joinParts(raw, "; ", false))
		}
		return o.joinParts(lang, pick(lang, "", "; ", "；"), false)
	case NoteAllOfFailed, NoteAnyOfPassed:
		if lang == raw {
			word := map[Note]string{NoteAllOfFailed: "allOf", NoteAnyOfPassed: "anyOf"}[o.Note]
			return fmt.Sprintf("%s of %s: %s", ordinal(atoi(a["index"])), word, part(o.Of[0]))
		}
		return cut(o.Of[0].say(lang))
	case NoteAnyOfNone:
		if lang == raw {
			return "none of anyOf: " + o.joinParts(raw, "; ", true)
		}
		return o.joinParts(lang, pick(lang, "", "; ", "；"), false)
	case NoteNotRejected, NoteNotAccepted, NoteNotUndecided, NoteNotError:
		if lang == raw {
			tail := map[Note]string{NoteNotRejected: " (does not match, as required)", NoteNotAccepted: " (it must not match)", NoteNotUndecided: " (nothing to judge, so no pass)"}[o.Note]
			return "not: " + part(o.Of[0]) + tail
		}
		if o.Note == NoteNotUndecided {
			return o.fill(pick(lang, "", "{of}: nothing to judge, so no pass", "{of}：无从判断，所以不算通过"), lang)
		}
		return o.Of[0].say(lang)

	case NoteNoAPI:
		return o.fill(pick(lang, "the cluster's API server: {detail}", "could not reach the cluster's API server: {detail}", "连不上集群的 API 服务器：{detail}"), lang)
	case NoteNoResource:
		return o.fill(pick(lang, `the cluster has no resource "{resource}"`, `the cluster has no resource "{resource}"`, "集群中没有资源 “{resource}”"), lang)
	case NoteReadFailed:
		return o.fill(pick(lang, "could not read {resource} {name}: {detail}", "could not read {resource} {name}: {detail}", "无法读取 {resource} {name}：{detail}"), lang)
	case NoteListFailed:
		return o.fill(pick(lang, "could not list {resource}: {detail}", "could not list {resource}: {detail}", "无法列出 {resource}：{detail}"), lang)
	case NoteJSONPath:
		return o.fill(pick(lang, "jsonpath {jsonpath}: {detail}", "JSONPath {jsonpath} failed: {detail}", "JSONPath {jsonpath} 出错：{detail}"), lang)
	case NoteOutputTooLarge:
		return o.fill(pick(lang, "output too large: the command on {node} printed more than {mib} MiB, and podpath stopped reading", "the command on {node} printed more than {mib} MiB, and podpath stopped reading", "{node} 上的命令输出超过了 {mib} MiB，podpath 停止了读取"), lang)
	case NoteExecFailed:
		return o.fill(pick(lang, "could not run a command on {node}: {detail}", "could not run a command on {node}: {detail}", "无法在 {node} 上运行命令：{detail}"), lang)
	case NoteTimedOut:
		return o.fill(pick(lang, "the command on {node} did not finish in time", "the command on {node} did not finish in time", "{node} 上的命令没有按时结束"), lang)
	case NoteNoJSON:
		if a["output"] == "" {
			return o.fill(pick(lang, "crictl {command} printed no JSON: ", "crictl {command} printed nothing, where JSON was expected", "crictl {command} 什么也没有输出，而这里应当输出 JSON"), lang)
		}
		return o.fill(pick(lang, "crictl {command} printed no JSON: {output}", "crictl {command} printed no JSON: {output}", "crictl {command} 输出的不是 JSON：{output}"), lang)
	case NoteCheckError:
		return o.fill(pick(lang, "{detail}", "the check itself is wrong: {detail}", "检查本身有错：{detail}"), lang)
	}
	return o.fill(pick(lang, "{value}", "{value}", "{value}"), lang)
}

// ofAnswer says the note is about the learner's answer.
func (o Observation) ofAnswer() bool { return len(o.Of) > 0 && o.Of[0].Note == NoteAnswer }

// joinParts says each of o's parts, cut to a line; numbered (1st read X)
// when asked, as anyOf's raw text has it.
func (o Observation) joinParts(lang, sep string, numbered bool) string {
	var out []string
	for i, p := range o.Of {
		switch {
		case numbered:
			out = append(out, ordinal(i+1)+" "+part(p))
		case lang == raw:
			out = append(out, cut(p.say(raw)))
		default:
			out = append(out, cut(p.say(lang)))
		}
	}
	return strings.Join(out, sep)
}

// part says in raw text what a part of a combined check read: "read X" for
// a probe that read X, or what a combined part, a script or a probe that
// could not read says of itself.
func part(o Observation) string {
	switch o.Note {
	case NoteAllOfPassed, NoteAllOfFailed, NoteAnyOfPassed, NoteAnyOfNone, NoteNotRejected, NoteNotAccepted, NoteNotUndecided, NoteNotError, NoteScript:
		return cut(o.Raw())
	}
	if o.isError() {
		return cut(o.Raw())
	}
	return "read " + cut(o.Raw())
}

// isError says the observation is of a probe that could not read.
func (o Observation) isError() bool {
	switch o.Note {
	case NoteNoAPI, NoteNoResource, NoteReadFailed, NoteListFailed, NoteJSONPath, NoteOutputTooLarge, NoteExecFailed, NoteTimedOut, NoteNoJSON, NoteCheckError, NoteCancelled:
		return true
	}
	return false
}

// lines is a value's lines joined into one line for a learner.
func lines(s, lang string) string {
	return labs.JoinLines(s, pick(lang, "\n", "; ", "；"))
}

// spokenDuration writes 90s as "1 min 30 s" or "1 分 30 秒".
func spokenDuration(d time.Duration, lang string) string {
	if d > 0 && d < time.Second {
		ms := d.Milliseconds()
		return pick(lang, "", fmt.Sprintf("%d ms", ms), fmt.Sprintf("%d 毫秒", ms))
	}
	d = d.Round(time.Second)
	m, s := int(d/time.Minute), int(d%time.Minute/time.Second)
	switch {
	case m == 0:
		return pick(lang, "", fmt.Sprintf("%d s", s), fmt.Sprintf("%d 秒", s))
	case s == 0:
		return pick(lang, "", fmt.Sprintf("%d min", m), fmt.Sprintf("%d 分钟", m))
	}
	return pick(lang, "", fmt.Sprintf("%d min %d s", m, s), fmt.Sprintf("%d 分 %d 秒", m, s))
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
