package server_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/fakesandbox"
)

// TestWorkshopEndedInBrowser is issue 18's class end, in two real headless
// Chromium browsers on a fake sandbox: a guest joins in Chinese, raises a
// hand, reads a broadcast wherever the page is scrolled; the instructor's
// page is open when the workshop is ended. The guest's lab page then says
// in Chinese that the class ended (no provisioning stages, no raised hand)
// and offers their results; their home page shows the results, says a
// guest account can take no more labs and offers no Start that would fail;
// the instructor's page shows the class ended, with no "ready in about"
// and no capacity in use.
func TestWorkshopEndedInBrowser(t *testing.T) {
	e := startServer(t, workshopConfig(t), fakesandbox.New())
	grace := e.staffNamed(t, "grace@example.com", "葛老师")
	now := time.Now()
	w := grace.createWorkshop(t, map[string]any{"title": "周二的课", "labs": []string{"yaml-to-process", "scheduler"}, "seats": 3,
		"startsAt": now.Add(-time.Minute).Format(time.RFC3339), "endsAt": now.Add(2 * time.Hour).Format(time.RFC3339), "guests": true, "prepare": 0})
	wid := itoa(w.ID)

	lctx := newBrowser(t, 1280, 800, 4*time.Minute)
	ictx := newBrowser(t, 1400, 900, 4*time.Minute)

	// The guest joins from the join page in Chinese and gets the lab page.
	do(lctx, t, chromedp.Navigate(e.url+"/join/"+w.Code+"?lang=zh"))
	poll(lctx, t, "the join form", `document.querySelector("#join-name") !== null`, 20*time.Second)
	do(lctx, t, chromedp.SendKeys(chromedp.CSS(`#join-name`), "小明"), chromedp.Click(chromedp.CSS(`#join-btn`)))
	poll(lctx, t, "the lab page with its workshop", `location.pathname.startsWith("/sessions/") && document.querySelector("#workshop-title") && document.querySelector("#workshop-title").textContent === "周二的课"`, 60*time.Second)
	sessPath := evalString(lctx, t, `location.pathname`)
	poll(lctx, t, "the cluster ready", `document.querySelector("#lab").dataset.state === "ready"`, 60*time.Second)

	// Provisioning stages are named in Chinese.
	stages := fetchString(lctx, t, `fetch("/api`+sessPath+`?lang=zh").then((r) => r.json()).then((s) => s.sandbox.progress.map((p) => p.title).join("|"))`)
	if stages == "" || !strings.Contains(stages, "节点容器") || strings.Contains(stages, "Node containers") {
		t.Errorf("the provisioning stages in Chinese: %q", stages)
	}

	// A hand, raised.
	do(lctx, t, chromedp.Click(chromedp.CSS(`#hand-btn`)))
	poll(lctx, t, "the raised hand", `!document.querySelector("#hand-note").hidden && document.querySelector("#hand-btn").dataset.raised === "true"`, 10*time.Second)

	// A broadcast reaches the guest scrolled to the bottom of the steps: a
	// banner at the top of the window, which they can hide; a new message
	// shows again.
	evalBool(lctx, t, `(document.querySelector(".guide").scrollTop = 1e6, true)`)
	if r := grace.do("POST", "/api/workshops/"+wid+"/broadcast", map[string]string{"message": "请大家看大屏幕"}); r.status != 204 {
		t.Fatalf("broadcast: %d %s", r.status, r.body)
	}
	const bannerSeen = `(() => { const b = document.querySelector("#broadcast"); if (b.hidden || !b.checkVisibility()) return false; const r = b.getBoundingClientRect(); return r.top >= 0 && r.bottom <= 220 && document.elementFromPoint(r.left + r.width / 2, r.top + 8).closest("#broadcast") !== null; })()`
	poll(lctx, t, "the broadcast at the top of the window", bannerSeen+` && document.querySelector("#broadcast-text").textContent === "请大家看大屏幕"`, 10*time.Second)
	shot(lctx, t, "workshop-broadcast-zh")
	do(lctx, t, chromedp.Click(chromedp.CSS(`#broadcast-close`)))
	poll(lctx, t, "the broadcast hidden", `document.querySelector("#broadcast").hidden`, 5*time.Second)
	do(lctx, t, chromedp.Reload())
	poll(lctx, t, "the page again", `document.querySelector("#lab").dataset.state === "ready"`, 30*time.Second)
	if !evalBool(lctx, t, `document.querySelector("#broadcast").hidden`) {
		t.Error("a hidden broadcast shows again after a reload")
	}
	if r := grace.do("POST", "/api/workshops/"+wid+"/broadcast", map[string]string{"message": "十分钟后结束"}); r.status != 204 {
		t.Fatalf("broadcast: %d %s", r.status, r.body)
	}
	poll(lctx, t, "the new broadcast", bannerSeen+` && document.querySelector("#broadcast-text").textContent === "十分钟后结束"`, 10*time.Second)

	// The instructor's page is open when the class ends.
	do(ictx, t,
		chromedp.Navigate(e.url+"/login?lang=zh"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), "grace@example.com"),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), "correct horse"),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
	)
	poll(ictx, t, "signed in", `location.pathname === "/"`, 20*time.Second)
	do(ictx, t, chromedp.Navigate(e.url+"/workshops/"+wid))
	poll(ictx, t, "the board with the guest", `document.querySelector('tr[data-learner]') !== null && document.querySelector("#ws-live").dataset.live === "on"`, 20*time.Second)

	if r := grace.do("POST", "/api/workshops/"+wid+"/end", nil); r.status != 200 {
		t.Fatalf("end: %d %s", r.status, r.body)
	}

	// The guest's lab page: the class ended, in Chinese, with their results.
	poll(lctx, t, "the class-ended overlay", `!document.querySelector("#overlay").hidden && document.querySelector("#overlay-title").textContent === "工作坊已结束"`, 15*time.Second)
	overlay := evalString(lctx, t, `document.querySelector(".overlay-card").innerText`)
	for _, want := range []string{"“周二的课”已经结束", "访客账号不能再做实验", "查看你的结果"} {
		if !strings.Contains(overlay, want) {
			t.Errorf("the overlay lacks %q:\n%s", want, overlay)
		}
	}
	for what, expr := range map[string]string{
		"provisioning stages":     `document.querySelector("#stages").checkVisibility()`,
		"the session-ended title": `document.querySelector(".overlay-card").innerText.includes("这个会话已结束")`,
		"the raised hand's note":  `document.querySelector("#hand-note").checkVisibility()`,
		"the hand button":         `document.querySelector("#hand-btn").checkVisibility()`,
		"a Start":                 visibleStarts + ` > 0`,
		"back to the labs":        `document.querySelector("#overlay-home").checkVisibility()`,
	} {
		if evalBool(lctx, t, expr) {
			t.Errorf("after the class ended, the guest's lab page shows %s", what)
		}
	}
	shot(lctx, t, "workshop-ended-guest-zh")

	// Their results, from the overlay: the home page says what is left.
	do(lctx, t, chromedp.Click(chromedp.CSS(`#overlay-results`)))
	poll(lctx, t, "the home page's workshop", `location.pathname === "/" && document.querySelector("#ws-home") !== null`, 20*time.Second)
	home := evalString(lctx, t, `document.querySelector("#ws-home").innerText`)
	for _, want := range []string{"周二的课", "已结束", "访客账号不能再做实验", "你的结果"} {
		if !strings.Contains(home, want) {
			t.Errorf("the guest's home page lacks %q:\n%s", want, home)
		}
	}
	if n := evalString(lctx, t, `String(document.querySelectorAll("#ws-home tr[data-lab]").length)`); n != "2" {
		t.Errorf("the guest's results have %s labs, want the workshop's 2", n)
	}
	if evalBool(lctx, t, visibleStarts+` > 0 || document.querySelector("ol.labs") !== null`) {
		t.Error("the guest's home page offers labs to start after the class ended")
	}
	shot(lctx, t, "workshop-ended-home-zh")
	// And were they to try anyway, the refusal is in Chinese and names the lab's title.
	refusal := fetchString(lctx, t, `fetch("/api/labs/scheduler/sessions?lang=zh", {method: "POST", headers: {"X-CSRF-Token": document.querySelector('meta[name="csrf-token"]').content}}).then(async (r) => r.status + " " + (await r.json()).error)`)
	if !strings.HasPrefix(refusal, "410 ") || !strings.Contains(refusal, "访客账号不能再做实验") || !strings.Contains(refusal, "周二的课") {
		t.Errorf("a guest's start after the end: %s", refusal)
	}

	// The instructor's page: ended, nothing being made, nothing in use.
	poll(ictx, t, "the instructor's page ended", `document.querySelector("#workshop").dataset.state === "ended" && !document.querySelector("#ws-ended").hidden`, 15*time.Second)
	clusters := evalString(ictx, t, `document.querySelector(".ws-clusters").innerText`)
	if !strings.Contains(clusters, "本班的所有集群都已删除") || strings.Contains(clusters, "预计") || strings.Contains(clusters, "占用") || evalBool(ictx, t, `document.querySelector("#ws-capacity").checkVisibility()`) {
		t.Errorf("the instructor's clusters panel after the end:\n%s", clusters)
	}
	if evalBool(ictx, t, `document.querySelector('tr[data-learner].hand') !== null`) {
		t.Error("the board still shows the raised hand after the end")
	}
	shot(ictx, t, "workshop-ended-instructor-zh")
	// Reloaded, it says the same.
	do(ictx, t, chromedp.Reload())
	poll(ictx, t, "the ended page, reloaded", `document.querySelector("#ws-ready").dataset.full === "ended" && document.querySelector("#ws-eta").textContent === "" && document.querySelector("#ws-capacity").hidden`, 20*time.Second)
}
