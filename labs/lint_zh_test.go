package labs

import (
	"strings"
	"testing"
	"testing/fstest"
)

// withTakeaways is validLab with takeaways in English and Chinese.
func withTakeaways(t *testing.T, en, zh string) string {
	t.Helper()
	return edit(t, validLab, "level: beginner\n",
		"takeaways:\n  en: |-\n    "+strings.ReplaceAll(en, "\n", "\n    ")+"\n  zh: |-\n    "+strings.ReplaceAll(zh, "\n", "\n    ")+"\nlevel: beginner\n")
}

var strictLanguages = LoadOptions{Languages: Languages, Strict: true}

// Each way the find-and-replace of issue 21 damaged the Chinese takeaways
// is reported at the line and field of lab.yaml, with the form written and
// the one to write; the repaired takeaway has no problem. A cut name is a
// problem of any lab; the glossary's forms and typography are warnings of
// an operator's lab and problems of a strict (built-in) one.
func TestChineseTakeawaysDamaged(t *testing.T) {
	cases := []struct {
		name, en, broken, fixed string
		// message has the bad form and the form to use.
		message []string
		style   bool
	}{
		{"cut RunPodSandbox", "kubelet's first CRI call for a Pod is RunPodSandbox.",
			"kubelet 为 Pod 发出的第一个 CRI 调用是 RunPod沙箱。", "kubelet 为 Pod 发出的第一个 CRI 调用是 RunPodSandbox。",
			[]string{`"RunPod沙箱"`, "write RunPodSandbox whole"}, false},
		{"cut shareProcessNamespace", "With shareProcessNamespace: true the containers share one PID namespace.",
			"设置 shareProcess命名空间: true 之后，容器共用一个 PID 命名空间。", "设置 shareProcessNamespace: true 之后，容器共用一个 PID 命名空间。",
			[]string{`"shareProcess命名空间"`, "write shareProcessNamespace whole"}, false},
		{"space after API 服务器", "The API server stores the Pod before any node is chosen.",
			"API 服务器 在选定节点之前就存下了 Pod。", "API 服务器在选定节点之前就存下了 Pod。",
			[]string{`"服务器 在选定节点之前就存下了"`, "no space between two Chinese characters", `write "服务器在选定节点之前就存下了"`}, true},
		{"spaces around 沙箱", "The CNI plugin gives the sandbox its IP.",
			"CNI 插件给 沙箱 分配 IP。", "CNI 插件给沙箱分配 IP。",
			[]string{`"插件给 沙箱 分配"`, `write "插件给沙箱分配"`}, true},
		{"Worker", "kubelet on a worker node keeps its Pods running.",
			"Worker 上的 kubelet 让它的 Pod 继续运行。", "工作节点上的 kubelet 让它的 Pod 继续运行。",
			[]string{`"Worker"`, "write 工作节点"}, true},
		{"API Server", "The API server stores the Pod.",
			"API Server 存下了 Pod。", "API 服务器存下了 Pod。",
			[]string{`"API Server"`, "write API 服务器"}, true},
		{"控制面", "The control plane node is tainted.",
			"控制面节点有污点。", "控制平面节点有污点。",
			[]string{`"控制面"`, "write 控制平面"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// The broken line is the second takeaway: line 10 of lab.yaml.
			y := withTakeaways(t, "A first line.\n"+tc.en, "第一行。\n"+tc.broken)
			check := func(ps Problems, warning bool) {
				t.Helper()
				var found []Problem
				for _, p := range ps {
					if strings.Contains(p.Message, "Chinese text") {
						found = append(found, p)
					}
				}
				if len(found) != 1 {
					t.Fatalf("want one finding, got:\n%v", ps)
				}
				p := found[0]
				if p.File != "lab/lab.yaml" || p.Line != 10 || p.Field != "takeaways.zh" || p.Warning != warning {
					t.Errorf("at %s:%d %s (warning %v), want lab/lab.yaml:10 takeaways.zh (warning %v)", p.File, p.Line, p.Field, p.Warning, warning)
				}
				for _, m := range tc.message {
					if !strings.Contains(p.Message, m) {
						t.Errorf("message %q lacks %q", p.Message, m)
					}
				}
			}
			_, ps := Load(labFS(y), "lab", strictLanguages)
			check(ps, false)
			lab, ps := Load(labFS(y), "lab", bothLanguages)
			if tc.style {
				if len(ps) > 0 {
					t.Fatalf("a matter of style fails an operator's lab:\n%v", ps)
				}
				check(lab.Warnings, true)
			} else {
				check(ps, false)
			}
			fixed := withTakeaways(t, "A first line.\n"+tc.en, "第一行。\n"+tc.fixed)
			if lab, ps := Load(labFS(fixed), "lab", strictLanguages); len(ps) > 0 || len(lab.Warnings) > 0 {
				t.Errorf("the repaired takeaway: %v %v", ps, lab.Warnings)
			}
		})
	}
}

// lintZh on one text: what it reports, and what it leaves alone.
func TestLintZh(t *testing.T) {
	cases := []struct {
		zh, en string
		// want is in the one finding; "" for none.
		want string
	}{
		// Glossary forms.
		{"API Server 存下 Pod。", "", `"API Server" in a Chinese text: write API 服务器`},
		{"APIServer 存下 Pod。", "", `write API 服务器`},
		{"控制面节点", "", "write 控制平面"},
		{"两个 Worker 节点", "", `"Worker 节点" in a Chinese text: write 工作节点`},
		{"每个 Pod（容器组）", "", `"容器组" in a Chinese text: write Pod`},
		{"Kubelet 启动容器", "", `"Kubelet" in a Chinese text: write kubelet`},
		{"Containerd 启动容器", "", "write containerd"},
		{"一个新的 Sandbox", "", `"Sandbox" in a Chinese text: write Pod 沙箱 or 沙箱`},
		{"这份 Spec 里", "", `"Spec" in a Chinese text: write Pod 规约`},
		{"Pod spec 里的限制", "", `"Pod spec"`},
		{"交给 runc 的 OCI Runtime Spec", "", `"OCI Runtime Spec" in a Chinese text: write OCI 运行时规范`},
		{"节点上的 Taint", "", "write 污点"},
		{"Pod 的 Toleration", "", "write 容忍度"},
		{"经由 containerd 的 socket 请求", "", `"socket" in a Chinese text: write 套接字`},
		{"网络 namespace", "", "write 命名空间 (a Linux namespace) or 名字空间"},
		{"Scheduler 选了节点", "", "write 调度器"},
		{"Pause 容器没被碰过", "", `"Pause" in a Chinese text: write pause`},
		{"执行 **Liveness/Readiness 探针**", "", "write 存活探针, 就绪探针, 启动探针"},
		{"用选择算符挑 Pod", "", "write 选择器"},
		{"stress 的 worker 进程", "", "write 工作节点"},
		// Names, paths, commands, code and glosses are not sentences.
		{"kube-scheduler 和 default-scheduler 是名字", "", ""},
		{"在 Node 的 spec 里，spec.nodeName 字段", "", ""},
		{"kubectl taint node node01 k=v:NoSchedule", "", ""},
		{"kubectl describe node node01 会在 Taints 一栏列出它的污点", "", ""},
		{"kubectl get pods --namespace kube-system", "", ""},
		{"用 `API Server` 这个词的日志", "", ""},
		{"```\nAPI Server 沙箱 在\n```\n", "", ""},
		{"*镜像 Pod*（mirror Pod）和污点驱逐控制器（taint eviction controller）", "", ""},
		{"KubeletConfiguration 和 RunPodSandbox", "", ""},
		{"在 {{ .Nodes.node01 }} 上运行", "", ""},
		// Names cut by the translation.
		{"调用是 RunPod沙箱。", "", `"RunPod沙箱" in a Chinese text: the name RunPodSandbox is cut and half translated`},
		{"加上 shareProcess命名空间: true", "", `"shareProcess命名空间" in a Chinese text: the name shareProcessNamespace is cut`},
		{"原因是 `沙箱Changed`", "", `"沙箱Changed" in a Chinese text: the name SandboxChanged is cut`},
		{"`RunPod沙箱` 调用", "", `"RunPod沙箱"`},
		{"在 nginx 的 PID 里", "", ""},
		// Names the English has and the Chinese lacks.
		{"调用 RunPod 沙箱。", "The call is RunPodSandbox.", "the English text names RunPodSandbox once, the Chinese text nowhere"},
		{"`nodeName` 是 `node01`", "`nodeName` is `node01`, and nodeName is set once.", "the English text names nodeName twice, the Chinese text once"},
		{"磁盘：`disk`", "The `disk` label: a full disk.", ""},
		{"两个 DaemonSet", "Two DaemonSets.", ""},
		{"`restartPolicy` 是 `Never`", "`restartPolicy: Never`", ""},
		// Typography.
		{"API 服务器 在选定节点之前", "", `"服务器 在选定节点之前" in a Chinese text: no space between two Chinese characters; write "服务器在选定节点之前"`},
		{"然后点 **检查**。", "", `write "然后点**检查"`},
		{"同步循环（SyncLoop） 会", "", `"SyncLoop） 会" in a Chinese text: no space next to full-width punctuation; write "SyncLoop）会"`},
		{"文章说 kubelet “每 10 秒上报一次心跳”", "", `"kubelet “每" in a Chinese text: no space next to full-width punctuation; write "kubelet“每"`},
		{"结束 。", "", "no space next to full-width punctuation"},
		{"- （一个注释）", "", ""},
		{"state 容器ID 会显示", "", `"容器ID" in a Chinese text: a space between Chinese and Latin letters or digits; write "容器 ID"`},
		{"共 3个", "", `write "3 个"`},
		{"意思是\"这个容器卡死了\"：", "", `ASCII quotes in a Chinese text, "这个容器卡死了": write “这个容器卡死了”`},
		{"文章说的\"5 分钟\"，对应", "", `write “5 分钟”`},
		{"只有一个\"引号", "", `an ASCII quote in "只有一个\"引号" in a Chinese text`},
		{"kubectl get node -o jsonpath='{.status.conditions[?(@.type==\"Ready\")].lastHeartbeatTime}'。再读一次。", "", ""},
		{"journalctl 里写着 podUID=\"...\"；", "", ""},
		{"在 node01 上，`crictl ps` 列出容器：64 MiB。", "", ""},
	}
	for _, tc := range cases {
		// The first finding has what the case wants; a place is reported
		// once.
		fs := lintZh(tc.zh, tc.en, knownIdentifiers)
		switch {
		case tc.want == "" && len(fs) > 0:
			t.Errorf("%q: want nothing, got %q", tc.zh, fs[0].msg)
		case tc.want != "" && len(fs) != 1:
			t.Errorf("%q: want one finding with %q, got %v", tc.zh, tc.want, fs)
		case tc.want != "" && !strings.Contains(fs[0].msg, tc.want):
			t.Errorf("%q: finding %q lacks %q", tc.zh, fs[0].msg, tc.want)
		}
	}
}

// A step's Chinese Markdown is linted line by line, outside its code; each
// finding names the file and the line.
func TestChineseMarkdownLines(t *testing.T) {
	fsys := labFS(validLab)
	fsys["lab/steps/second.en.md"] = &fstest.MapFile{Data: []byte("The API server.\n\n```bash node01\ncrictl pods # API Server\n```\n\nThe `RunPodSandbox` call.\n")}
	fsys["lab/steps/second.zh.md"] = &fstest.MapFile{Data: []byte("API Server。\n\n```bash node01\ncrictl pods # API Server\n```\n\n`RunPodSandbox` 调用和 Sandbox。\n")}
	_, ps := Load(fsys, "lab", strictLanguages)
	var got []string
	for _, p := range ps {
		got = append(got, p.String())
	}
	want := []string{
		`lab/steps/second.zh.md:1: "API Server" in a Chinese text: write API 服务器`,
		`lab/steps/second.zh.md:7: "Sandbox" in a Chinese text: write Pod 沙箱 or 沙箱`,
	}
	if len(got) != len(want) {
		t.Fatalf("got:\n%s\nwant %d problems", strings.Join(got, "\n"), len(want))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n %s\nwant it to start\n %s", i, got[i], want[i])
		}
	}
	// A cut name in Markdown is a problem of any lab; a name the English
	// text has and the Chinese lacks is one of the whole file.
	fsys["lab/steps/second.zh.md"] = &fstest.MapFile{Data: []byte("API 服务器。\n\n```bash node01\ncrictl pods # API Server\n```\n\n`RunPod沙箱` 调用。\n")}
	_, ps = Load(fsys, "lab", bothLanguages)
	if len(ps) != 1 || ps[0].Line != 7 || !strings.Contains(ps[0].Message, "RunPodSandbox is cut") {
		t.Errorf("got:\n%v", ps)
	}
	// That is a warning of an operator's lab, and a problem of a strict one.
	fsys["lab/steps/second.zh.md"] = &fstest.MapFile{Data: []byte("API 服务器。\n\n```bash node01\ncrictl pods # API Server\n```\n\n`RunPod` 沙箱调用。\n")}
	lab, ps := Load(fsys, "lab", bothLanguages)
	if len(ps) > 0 {
		t.Fatalf("a name left out fails an operator's lab: %v", ps)
	}
	if w := lab.Warnings; len(w) != 1 || w[0].Line != 0 || w[0].File != "lab/steps/second.zh.md" || !strings.Contains(w[0].Message, "the English text names RunPodSandbox once, the Chinese text nowhere") {
		t.Errorf("got:\n%v", w)
	}
	if _, ps := Load(fsys, "lab", strictLanguages); len(ps) != 1 || ps[0].Warning {
		t.Errorf("strict: got:\n%v", ps)
	}
}

// Every text of lab.yaml with a zh: is linted, however deep: a hint, an
// observed reading in a condition of allOf, a step's answer label.
func TestChineseEveryField(t *testing.T) {
	y := edit(t, validLab,
		"{en: Look at the pod, zh: 看看 Pod}", "{en: Look at the pod, zh: 看看 API Server}",
		"        expect: {equals: Running}\n", "        expect: {equals: Running}\n        observed: [{en: \"it is {value}\", zh: \"它处于 {value} 状态，调度器 已经选了节点\"}]\n",
	)
	_, ps := Load(labFS(y), "lab", strictLanguages)
	for _, w := range []want{
		{19, "steps[0].checks[0].observed[0].zh", `"调度器 已经选了节点" in a Chinese text: no space between two Chinese characters`},
		{22, "steps[0].checks[0].hints[1].zh", `"API Server" in a Chinese text`},
	} {
		if !w.in(ps) {
			t.Errorf("missing %v in:\n%v", w, ps)
		}
	}
	if len(ps) != 2 {
		t.Errorf("want 2 problems, got:\n%v", ps)
	}
}

// The built-in track's Chinese texts follow the glossary too; a track in a
// folder has its cut names reported, and not its style.
func TestChineseTrack(t *testing.T) {
	broken := strings.Replace(validTrack, "zh: 两个实验", "zh: 调用 RunPod沙箱，两个 namespace 实验", 1)
	dir := trackDir(t, map[string]string{"t": broken})
	_, ps := LoadDirTracks(dir + "/t")
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "RunPodSandbox is cut") || ps[0].Field != "description.zh" {
		t.Errorf("a folder's track: got %v", ps)
	}
	_, ps = LoadTrack(fstest.MapFS{"t/track.yaml": {Data: []byte(broken)}}, "t", LoadOptions{Strict: true})
	if len(ps) != 2 || !strings.Contains(ps[1].Message, `"namespace" in a Chinese text`) {
		t.Errorf("a strict track: got %v", ps)
	}
}

// No built-in lab or track has a Chinese text the lints find fault with.
func TestBuiltinChineseFollowsGlossary(t *testing.T) {
	_, ps := Builtin()
	_, tps := BuiltinTracks()
	for _, p := range append(ps, tps...) {
		t.Error(p)
	}
}
