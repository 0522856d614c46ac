package server

import "regexp"

// The words of a class's pages beyond the lab page's own: the end of a
// workshop as its learners and instructor see it, the take-over log, the
// capacity note, the path diagram, provisioning stages, and the server's
// refusals a learner or an instructor reads on a page. Keys ending in
// "_one" are the English singular of the key without it (see plural);
// Chinese has one form for every count.

func init() {
	addMessages("class pages", classMessages)
	addMessages("server errors", errorMessages)
}

var classMessages = map[string]map[string]string{
	"en": {
		// Counts.
		"seatcount":     "{n} seats",
		"seatcount_one": "{n} seat",
		"stepcount":     "{n} steps",
		"stepcount_one": "{n} step",
		"labcount":      "{n} labs",
		"labcount_one":  "{n} lab",

		// Levels of a lab (lab.yaml's level).
		"level_beginner":     "beginner",
		"level_intermediate": "intermediate",
		"level_advanced":     "advanced",

		// The path diagram.
		"pathcontrolplane": "control plane",
		"pathworker":       "worker",
		"layerapiserver":   "API server",
		"layerscheduler":   "scheduler",
		"layercontrollers": "controllers",
		"layerkernel":      "kernel",

		// Provisioning stages (sandbox and session stage names).
		"stage_network":       "Docker network for this cluster",
		"stage_nodes":         "Node containers",
		"stage_config":        "kubeadm configuration",
		"stage_control-plane": "Control plane (kubeadm init)",
		"stage_cni":           "Pod network (flannel CNI)",
		"stage_storage":       "Default StorageClass",
		"stage_workers":       "Workers join (kubeadm join)",
		"stage_node-setup":    "Node names, hosts and SSH keys",
		"stage_nodes-ready":   "Every node Ready",
		"stage_dns":           "CoreDNS running",
		"stage_pod-network":   "Pod-to-Pod traffic across nodes",
		"stage_lab-setup":     "Lab setup",
		"stage_claim":         "A prepared cluster wakes up",

		// A cluster's state, as the board and messages name it.
		"wscl_requested":    "requested",
		"wscl_provisioning": "being made",
		"wscl_ready":        "ready",
		"wscl_hibernated":   "asleep",
		"wscl_expiring":     "ending",
		"wscl_deleted":      "deleted",
		"wscl_failed":       "failed",

		// Plurals of the workshop pages' counts.
		"wsattempts_one":     "{n} attempt",
		"wshints_one":        "{n} hint shown",
		"wsextended_one":     "Extended {n} session by 15 min.",
		"wsstuckfails":       "{n} failed checks on {step}",
		"wsstuckfails_one":   "{n} failed check on {step}",
		"wsstuckminutes":     "{n} minutes on {step}",
		"wsstuckminutes_one": "{n} minute on {step}",

		// The capacity note on the instructor's page.
		"wscapfits":       "This server can run {n} clusters of this class at once ({cpu} CPU cores and {mem} MiB of memory each); with {seats}, everyone fits.",
		"wscapfits_one":   "This server can run {n} cluster of this class at a time ({cpu} CPU cores and {mem} MiB of memory); with {seats}, everyone fits.",
		"wscapshort":      "This server can run only {n} clusters of this class at once ({cpu} CPU cores and {mem} MiB of memory each), and the class has {seats}: learners who join after the first {n} wait in a queue until someone's cluster is deleted. Lower the seats, or ask the server's admin for a bigger host.",
		"wscapshort_one":  "This server can run only {n} cluster of this class at a time ({cpu} CPU cores and {mem} MiB of memory), and the class has {seats}: learners who join after the first wait in a queue until that cluster is deleted. Lower the seats, or ask the server's admin for a bigger host.",
		"wscapnow":        "In use now: {cpuused} of {cpulimit} CPU cores and {memused} of {memlimit} MiB of memory ({running} running, {asleep} asleep).",
		"wsclustersended": "The workshop has ended: every cluster of the class was deleted.",

		// The end of a workshop, for its learners.
		"wsclassended":     "The workshop has ended",
		"wsendedguest":     "“{title}” is over and your cluster was deleted. Your results are kept. A guest account can take no more labs.",
		"wsendedlearner":   "“{title}” is over and your cluster was deleted. Your results are kept, and the labs of your own account work as usual.",
		"wsseeresults":     "See your results",
		"wsyourresults":    "Your results",
		"wshomeendedguest": "This workshop has ended. A guest account can take no more labs; your results are below.",
		"wshomeended":      "This workshop has ended; your results are below. Every lab on this page is yours to take, as before.",
		"wsguestsignup":    "To take labs on your own, sign out, then sign up for an account of your own.",
		"wsguestaskadmin":  "To take labs on your own, ask this server's admin for an account of your own.",
		"wsguestnomore":    "A guest account can take no more labs.",
		"wsnotinworkshop":  "Not in your workshop",
		"wsnotopen":        "Your workshop is not open yet",
		"wsbacktolab":      "Back to your lab",
		"wsdismiss":        "Hide this message",

		// The take-over log.
		"wstointro":         "Every time an instructor typed in a learner's terminal: who, whose, on which node, when, for how long, and who ended it.",
		"wstonone":          "Nobody has taken over a terminal in this workshop.",
		"wstoinstructor":    "Instructor",
		"wstonode":          "Node",
		"wstostarted":       "Started",
		"wstoended":         "Ended",
		"wstolasted":        "Lasted",
		"wstoendedby":       "Ended by",
		"wstoongoing":       "still going",
		"wstoby_instructor": "the instructor",
		"wstoby_learner":    "the learner",
		"wstoby_server":     "the server",
	},
	"zh": {
		"seatcount": "{n} 个名额",
		"stepcount": "{n} 步",
		"labcount":  "{n} 个实验",

		"level_beginner":     "入门",
		"level_intermediate": "中级",
		"level_advanced":     "高级",

		"pathcontrolplane": "控制平面",
		"pathworker":       "工作节点",
		"layerapiserver":   "API 服务器",
		"layerscheduler":   "调度器",
		"layercontrollers": "控制器",
		"layerkernel":      "内核",

		"stage_network":       "这个集群的 Docker 网络",
		"stage_nodes":         "节点容器",
		"stage_config":        "kubeadm 配置",
		"stage_control-plane": "控制平面（kubeadm init）",
		"stage_cni":           "Pod 网络（flannel CNI）",
		"stage_storage":       "默认的 StorageClass",
		"stage_workers":       "工作节点加入（kubeadm join）",
		"stage_node-setup":    "节点名、hosts 和 SSH 密钥",
		"stage_nodes-ready":   "所有节点都已就绪",
		"stage_dns":           "CoreDNS 已运行",
		"stage_pod-network":   "跨节点的 Pod 间通信",
		"stage_lab-setup":     "准备实验环境",
		"stage_claim":         "唤醒预先准备的集群",

		"wscl_requested":    "已请求",
		"wscl_provisioning": "创建中",
		"wscl_ready":        "就绪",
		"wscl_hibernated":   "休眠中",
		"wscl_expiring":     "即将结束",
		"wscl_deleted":      "已删除",
		"wscl_failed":       "失败",

		"wsstuckfails":   "在“{step}”上检查失败 {n} 次",
		"wsstuckminutes": "在“{step}”上已停留 {n} 分钟",

		"wscapfits":       "这台服务器可以同时运行 {n} 个本班的集群（每个占 {cpu} 个 CPU 核、{mem} MiB 内存）；本班 {seats}，所有人都能同时上机。",
		"wscapshort":      "这台服务器最多只能同时运行 {n} 个本班的集群（每个占 {cpu} 个 CPU 核、{mem} MiB 内存），而本班有 {seats}：前 {n} 位之后加入的学员要排队，等有人的集群被删除才能上机。请减少名额，或请服务器管理员换一台更大的主机。",
		"wscapnow":        "当前占用：CPU {cpuused} / {cpulimit} 核，内存 {memused} / {memlimit} MiB（{running} 个运行中，{asleep} 个休眠中）。",
		"wsclustersended": "工作坊已结束：本班的所有集群都已删除。",

		"wsclassended":     "工作坊已结束",
		"wsendedguest":     "“{title}”已经结束，你的集群已被删除，你的结果会保留。访客账号不能再做实验了。",
		"wsendedlearner":   "“{title}”已经结束，你的集群已被删除，你的结果会保留；你自己账号下的实验照常可以做。",
		"wsseeresults":     "查看你的结果",
		"wsyourresults":    "你的结果",
		"wshomeendedguest": "这个工作坊已经结束。访客账号不能再做实验了；你的结果在下面。",
		"wshomeended":      "这个工作坊已经结束；你的结果在下面。这个页面上的实验你都可以照常做。",
		"wsguestsignup":    "想自己继续做实验，请先退出，再注册一个你自己的账号。",
		"wsguestaskadmin":  "想自己继续做实验，请向本服务器的管理员申请一个你自己的账号。",
		"wsguestnomore":    "访客账号不能再做实验了。",
		"wsnotinworkshop":  "不在你的工作坊里",
		"wsnotopen":        "你的工作坊还没开始",
		"wsbacktolab":      "回到你的实验",
		"wsdismiss":        "关闭这条通知",

		"wstointro":         "讲师每次在学员终端里输入的记录：谁、接管了谁、在哪个节点、何时、多久，以及由谁结束。",
		"wstonone":          "这个工作坊里还没有人接管过终端。",
		"wstoinstructor":    "讲师",
		"wstonode":          "节点",
		"wstostarted":       "开始",
		"wstoended":         "结束",
		"wstolasted":        "持续",
		"wstoendedby":       "结束者",
		"wstoongoing":       "进行中",
		"wstoby_instructor": "讲师",
		"wstoby_learner":    "学员",
		"wstoby_server":     "服务器",
	},
}

// errorMessages are the server's refusals a learner or an instructor reads
// on a page (the API answers them in the request's language too). Values
// in quotes, like "title", are the API's field names.
var errorMessages = map[string]map[string]string{
	"en": {
		"errinternal":    "internal error; the server log has the details",
		"errnotfound":    "not found",
		"errnopage":      "There is no page at this address.",
		"errtoolarge":    "request body too large (limit 1 MB)",
		"errsigninagain": "sign in again",
		"errformexpired": "this form expired; reload the page and try again",
		"errformforeign": "this form expired or came from another site; reload the page and try again",
		"errbadlogin":    "wrong email or password",
		"errloginrate":   "too many sign-in attempts; wait a minute and try again",
		"errsignuprate":  "too many sign-ups from here; wait a minute and try again",
		"errbademail":    "enter an email address like ada@example.com",
		"errnamelong":    "the name can have at most 80 characters",
		"errpwshort":     "the password needs at least 8 characters",
		"errpwlong":      "the password can have at most 72 bytes",
		"erremailtaken":  "an account with this email exists: sign in instead",

		"errsessionid":     "{id} is not a session id (a UUID)",
		"errnosession":     "no such session",
		"errsessionended":  "this session has ended; start the lab again",
		"errlabgone":       "lab {lab} is no longer installed on this server",
		"errnolab":         "no lab {lab}; GET /api/labs lists them",
		"errnostep":        "lab {lab} has no step {step}",
		"errnoskip":        "this step cannot be skipped",
		"errnotready":      "the cluster is not ready yet (it is {state})",
		"errretry":         "only a failed cluster can be retried; this one is {state}",
		"errfinding":       "the server is still finding its clusters (is Docker running?); try again in a minute",
		"errdocker":        "Docker does not answer ({why}): start dockerd (scripts/quickstart does); podpath changes no cluster until it answers, and tries again every few seconds",
		"errextended":      "this session was already extended {n} times, the most allowed",
		"errextended_one":  "this session was already extended once, the most allowed",
		"erranswerlong":    "the answer is too long (2000 characters at most)",
		"erractive":        "you already have an active session of lab \"{lab}\": resume it, or end it (DELETE /api/sessions/{id}) before starting another",
		"errguestended":    "the workshop \"{title}\" has ended: a guest account can take no more labs (your results are on the home page)",
		"errguestnotyet":   "the workshop \"{title}\" is not open yet: as its guest you can take its labs while it is",
		"errguestotherlab": "as a guest of a workshop you can take its labs only; \"{lab}\" is not one of them",

		// A start or an attempt the database did not take (the engine's refusals).
		"errattemptnotsaved": "this attempt could not be saved, so it does not count yet; try again in a moment",
		"errstartnotsaved":   "the lab session could not be saved, so nothing was started; start the lab again in a moment",

		"errinstructoronly": "only instructors and admins run workshops; an admin can make you one with: podpath user role --email YOU --role instructor",
		"errworkshopid":     "{id} is not a workshop id (a number)",
		"errnoworkshop":     "no such workshop among yours",
		"errlearnerid":      "{id} is not a learner id (a number)",
		"errnolearner":      "no such learner in this workshop",
		"errwstitle":        "send a \"title\" for the workshop",
		"errwstitlelong":    "the title can have at most 200 characters",
		"errwslabs":         "send \"labs\": the ids of one or more labs, in order (GET /api/labs lists them)",
		"errwslabsmax":      "a workshop can have at most 50 labs",
		"errwsseats":        "\"seats\" must be from 1 to {max}",
		"errwstimes":        "send \"startsAt\" and \"endsAt\" as RFC 3339 times, like \"2026-12-02T09:00:00Z\"",
		"errwsorder":        "\"endsAt\" must be after \"startsAt\"",
		"errwslong":         "a workshop can last at most 14 days",
		"errwspast":         "\"endsAt\" is in the past",
		"errwsnolab":        "no lab {lab}; GET /api/labs lists them",
		"errwslabtwice":     "lab {lab} is listed twice",
		"errwsprepare":      "\"prepare\" (clusters to prepare ahead) must be from 0 to the seats ({seats})",
		"errwslead":         "\"prepareLeadMinutes\" must be from 0 to 1440 (a day)",
		"errwsnolabs":       "none of this workshop's labs is installed on this server any more; tell the instructor",
		"errhandnows":       "this session is not part of a workshop: there is nobody to ask",
		"errnotakeover":     "nobody is typing in your terminal",
		"errbroadcastlong":  "a broadcast can have at most 1000 characters",
		"errextendminutes":  "\"minutes\" must be from 1 to 1440",
		"errresetnosession": "this learner has no session yet: nothing to reset",
		"errresetfailed":    "the reset could not be saved, so nothing changed: the learner keeps their session and progress; try Reset again in a moment",
		"errendfailed":      "the workshop could not be ended: the server could not save it, so nothing changed and the class goes on; try End workshop again in a moment",
		"errresetstep":      "\"fromStep\" {step} is not a step of lab {lab}, the learner's; send \"\" (reset all progress) or one of: {steps}",
		"errwatchnosession": "{name} has no active session in this workshop",
		"errwatchnotready":  "{name}'s cluster is {state}, not ready",

		"errjoinnocode":     "send the workshop's join code (\"code\"), as your instructor gave it",
		"errjointoomany":    "too many wrong join codes from this browser or network; wait a minute, then type the code again",
		"errjoinnone":       "no open workshop has the code {code}: check it with your instructor (codes have letters and digits, no 0, O, 1, I or l), and join between the workshop's start and its end",
		"errjoinended":      "the workshop \"{title}\" has ended; its results are kept, but it takes no learners",
		"errcodeended":      "this workshop has ended and its join code was retired with it: there is no code to rotate",
		"errjoinnamelong":   "the name can have at most 60 characters",
		"errjoinaccount":    "the workshop \"{title}\" needs an account: sign in (or sign up), then join with the code again",
		"errjoinname":       "send your name (\"name\") as the instructor should see it",
		"errjoinotherguest": "you are signed in as a guest of another workshop; a guest belongs to one workshop: sign out, then join this one",
		"errjoinactive":     "you have an active session of lab \"{lab}\" outside the workshop \"{title}\": end it (End session on its page, or DELETE /api/sessions/{id}), then join",
		"errjoinreload":     "this browser joined as a guest already; reload the page",
		"errjoinfull":       "every seat of the workshop \"{title}\" is taken ({seats} seats); ask the instructor",
	},
	"zh": {
		"errinternal":    "服务器内部错误；详情见服务器日志",
		"errnotfound":    "找不到",
		"errnopage":      "这个地址没有页面。",
		"errtoolarge":    "请求体太大（上限 1 MB）",
		"errsigninagain": "请重新登录",
		"errformexpired": "这个表单已过期；请刷新页面后重试",
		"errformforeign": "这个表单已过期，或来自其他网站；请刷新页面后重试",
		"errbadlogin":    "邮箱或密码不对",
		"errloginrate":   "登录尝试次数太多；请等一分钟再试",
		"errsignuprate":  "从这里注册的次数太多；请等一分钟再试",
		"errbademail":    "请填写像 ada@example.com 这样的邮箱地址",
		"errnamelong":    "名字最多 80 个字符",
		"errpwshort":     "密码至少需要 8 个字符",
		"errpwlong":      "密码最多 72 个字节",
		"erremailtaken":  "这个邮箱已有账号：请直接登录",

		"errsessionid":     "{id} 不是会话 ID（应为 UUID）",
		"errnosession":     "没有这个会话",
		"errsessionended":  "这个会话已结束；请重新开始这个实验",
		"errlabgone":       "这台服务器上已不再安装实验 {lab}",
		"errnolab":         "没有实验 {lab}；GET /api/labs 可列出全部实验",
		"errnostep":        "实验 {lab} 没有步骤 {step}",
		"errnoskip":        "这一步不能跳过",
		"errnotready":      "集群还没就绪（当前：{state}）",
		"errretry":         "只有失败的集群才能重试；这个集群当前：{state}",
		"errfinding":       "服务器还在查找它的集群（Docker 在运行吗？）；请一分钟后再试",
		"errdocker":        "Docker 没有响应（{why}）：请启动 dockerd（scripts/quickstart 会启动它）；在它响应之前 podpath 不会改动任何集群，并每隔几秒重试一次",
		"errextended":      "这个会话已经延长了 {n} 次，不能再延长了",
		"erranswerlong":    "答案太长了（最多 2000 个字符）",
		"erractive":        "你已经有一个进行中的实验“{lab}”的会话：请继续它，或先结束它（DELETE /api/sessions/{id}）再开始另一个",
		"errguestended":    "工作坊“{title}”已经结束：访客账号不能再做实验了（你的结果在首页）",
		"errguestnotyet":   "工作坊“{title}”还没开始：开始之后，你作为访客才能做它的实验",
		"errguestotherlab": "工作坊的访客只能做这个工作坊的实验；“{lab}”不在其中",

		"errattemptnotsaved": "这次尝试没能保存，所以还不算数；请稍后再试",
		"errstartnotsaved":   "实验会话没能保存，所以什么都没有开始；请稍后重新开始这个实验",

		"errinstructoronly": "工作坊只能由讲师和管理员开设；管理员可以用 podpath user role --email YOU --role instructor 把你设为讲师",
		"errworkshopid":     "{id} 不是工作坊编号（应为数字）",
		"errnoworkshop":     "你的工作坊里没有这一个",
		"errlearnerid":      "{id} 不是学员编号（应为数字）",
		"errnolearner":      "这个工作坊里没有这位学员",
		"errwstitle":        "请填写工作坊的标题（\"title\"）",
		"errwstitlelong":    "标题最多 200 个字符",
		"errwslabs":         "请至少选一个实验（\"labs\"：按顺序列出实验 ID，GET /api/labs 可列出全部实验）",
		"errwslabsmax":      "一个工作坊最多 50 个实验",
		"errwsseats":        "名额（\"seats\"）必须在 1 到 {max} 之间",
		"errwstimes":        "请以 RFC 3339 格式给出开始和结束时间（\"startsAt\"、\"endsAt\"），例如 \"2026-12-02T09:00:00Z\"",
		"errwsorder":        "结束时间（\"endsAt\"）必须晚于开始时间（\"startsAt\"）",
		"errwslong":         "一个工作坊最长 14 天",
		"errwspast":         "结束时间（\"endsAt\"）已经过去了",
		"errwsnolab":        "没有实验 {lab}；GET /api/labs 可列出全部实验",
		"errwslabtwice":     "实验 {lab} 列了两次",
		"errwsprepare":      "预先准备的集群数（\"prepare\"）必须在 0 到名额数（{seats}）之间",
		"errwslead":         "提前准备的分钟数（\"prepareLeadMinutes\"）必须在 0 到 1440（一天）之间",
		"errwsnolabs":       "这台服务器上已不再安装这个工作坊的任何实验；请告诉讲师",
		"errhandnows":       "这个会话不属于任何工作坊：没有可以求助的讲师",
		"errnotakeover":     "现在没有人在你的终端里输入",
		"errbroadcastlong":  "通知最多 1000 个字符",
		"errextendminutes":  "\"minutes\" 必须在 1 到 1440 之间",
		"errresetnosession": "这位学员还没有会话：没有可以重置的内容",
		"errresetfailed":    "重置没能保存，所以什么都没有改变：学员的会话和进度都保留着；请稍后再点一次“重置”",
		"errendfailed":      "无法结束工作坊：服务器没能保存，所以什么都没有改变，课程照常进行；请稍后再点一次“结束工作坊”",
		"errresetstep":      "\"fromStep\" {step} 不是这位学员所做实验 {lab} 的步骤；请发送 \"\"（重置全部进度）或以下之一：{steps}",
		"errwatchnosession": "{name} 在这个工作坊里没有进行中的会话",
		"errwatchnotready":  "{name} 的集群还没就绪（当前：{state}）",

		"errjoinnocode":     "请输入讲师给你的加入码（\"code\"）",
		"errjointoomany":    "从这个浏览器或网络输入错误加入码的次数太多；请等一分钟，再输入加入码",
		"errjoinnone":       "没有正在进行的工作坊使用加入码 {code}：请向讲师核对（加入码由字母和数字组成，不含 0、O、1、I 和 l），并在工作坊开始之后、结束之前加入",
		"errjoinended":      "工作坊“{title}”已经结束；它的结果会保留，但不再接收学员",
		"errcodeended":      "这个工作坊已经结束，它的加入码也随之作废：没有加入码可以更换",
		"errjoinnamelong":   "名字最多 60 个字符",
		"errjoinaccount":    "工作坊“{title}”需要账号：请先登录（或注册），再用加入码加入",
		"errjoinname":       "请填写你的名字（\"name\"），讲师会看到它",
		"errjoinotherguest": "你正以另一个工作坊的访客身份登录；访客只属于一个工作坊：请先退出，再加入这一个",
		"errjoinactive":     "你在工作坊“{title}”之外有一个进行中的实验“{lab}”的会话：请先结束它（在它的页面上点“结束会话”，或 DELETE /api/sessions/{id}），再加入",
		"errjoinreload":     "这个浏览器已经以访客身份加入了；请刷新页面",
		"errjoinfull":       "工作坊“{title}”的名额已满（{seats} 个）；请联系讲师",
	},
}

// sessionErrors read the session engine's refusals (session.Error's
// messages, in English) so that a page can say them in its language.
var sessionErrors = []struct {
	re   *regexp.Regexp
	key  string
	args []string // the names of re's groups, in order
}{
	{regexp.MustCompile(`^this session has ended; start the lab again$`), "errsessionended", nil},
	{regexp.MustCompile(`^this attempt could not be saved, so it does not count yet`), "errattemptnotsaved", nil},
	{regexp.MustCompile(`^the lab session could not be saved, so nothing was started`), "errstartnotsaved", nil},
	{regexp.MustCompile(`^lab (\S+) is no longer installed on this server$`), "errlabgone", []string{"lab"}},
	{regexp.MustCompile(`^lab (\S+) has no step (".*")$`), "errnostep", []string{"lab", "step"}},
	{regexp.MustCompile(`^this step cannot be skipped$`), "errnoskip", nil},
	{regexp.MustCompile(`^the cluster is not ready(?: yet)? \(it is (\w+)\)$`), "errnotready", []string{"state"}},
	{regexp.MustCompile(`^only a failed cluster can be retried; this one is (\w+)$`), "errretry", []string{"state"}},
	{regexp.MustCompile(`^the server is still finding its clusters`), "errfinding", nil},
	{regexp.MustCompile(`^Docker does not answer \((.*)\): start dockerd`), "errdocker", []string{"why"}},
}

// localizeSessionError says an engine's refusal in the language lg; one
// it does not know stays as the engine wrote it.
func localizeSessionError(m, lg string) string {
	for _, e := range sessionErrors {
		g := e.re.FindStringSubmatch(m)
		if g == nil {
			continue
		}
		var kv []any
		for i, name := range e.args {
			v := g[i+1]
			if name == "state" {
				v = translate("wscl_"+v, lg)
			}
			kv = append(kv, name, v)
		}
		return msg(lg, e.key, kv...)
	}
	return m
}
