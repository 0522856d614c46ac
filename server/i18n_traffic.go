package server

// The words of traffic ports (traffic.go): the port picker, the Ports
// buttons, and why a link to a learner's web app is refused.

func init() {
	addMessages("traffic ports", trafficMessages)
}

var trafficMessages = map[string]map[string]string{
	"en": {
		"ports":               "Ports",
		"portsbtn":            "Ports",
		"portsintro":          "Open a web app of your cluster in the browser: a NodePort, or anything listening on {node}. It opens on an address of its own that only you (and your workshop's instructor) can reach.",
		"port":                "Port",
		"openport":            "Open",
		"portspattern":        "The address of port PORT (also in /etc/killercoda/host on a Killercoda scenario's control plane):",
		"portsoff":            "This server does not open web apps of lab clusters: it needs PODPATH_TRAFFIC_DOMAIN, a domain whose wildcard DNS record points at it. Ask its admin.",
		"backtolab":           "Back to the lab",
		"errtrafficnosession": "No such lab session.",
		"errtrafficnotyours":  "This app runs in another learner's lab session: only they (and their workshop's instructor) may open it.",
		"errtrafficended":     "The lab session has ended, and its cluster with it.",
		"errtrafficnotready":  "The lab's cluster is {state}: open the lab page (it wakes a sleeping cluster), then this link again.",
	},
	"zh": {
		"ports":               "端口",
		"portsbtn":            "端口",
		"portsintro":          "在浏览器中打开集群里的 Web 应用：NodePort，或 {node} 上任何在监听的服务。它有自己独立的地址，只有你（以及你所在工作坊的讲师）能访问。",
		"port":                "端口",
		"openport":            "打开",
		"portspattern":        "端口 PORT 的地址（Killercoda 场景的控制平面上，/etc/killercoda/host 里也写着它）：",
		"portsoff":            "此服务器不开放实验集群里的 Web 应用：这需要设置 PODPATH_TRAFFIC_DOMAIN，即一个泛域名 DNS 记录指向本服务器的域名。请联系管理员。",
		"backtolab":           "返回实验",
		"errtrafficnosession": "没有这个实验会话。",
		"errtrafficnotyours":  "这个应用运行在另一位学员的实验会话中：只有该学员（以及其工作坊的讲师）可以打开。",
		"errtrafficended":     "实验会话已结束，它的集群也已删除。",
		"errtrafficnotready":  "实验集群当前{state}：请先打开实验页面（它会唤醒休眠的集群），再打开此链接。",
	},
}
