package server

// labMessages are the lab page's words for its countdown and the terminal
// client (web/static/js/terminal.js) that the lab and watch pages share.
var labMessages = map[string]map[string]string{
	"en": {
		"rundropped":    "The terminal did not connect, so the command was not run. Wait for the prompt and press the button again.",
		"classends":     "Class ends in",
		"classendssoon": "The class ends soon: your cluster will be deleted then. Your progress is kept.",
		"idlewarn":      "You seem to be away: this session ends in {time} unless you continue.",
		"idlecontinue":  "I'm here",
		"errnoleader":   "the server is changing hands between its replicas; try again in a few seconds",
	},
	"zh": {
		"rundropped":    "终端没有连上，命令没有执行。等提示符出现后再按一次按钮。",
		"classends":     "课程结束还有",
		"classendssoon": "课程快要结束了，届时你的集群会被删除。你的进度会保留。",
		"idlewarn":      "你好像离开了：如果不继续操作，这个会话将在 {time} 后结束。",
		"idlecontinue":  "我还在",
		"errnoleader":   "服务器正在副本之间交接；请几秒后再试",
	},
}

func init() {
	addMessages("lab page", labMessages)
}
