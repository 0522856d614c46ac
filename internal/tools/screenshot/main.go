// Command screenshot signs in to a running podpath, opens a lab session,
// types a command in its terminal, presses Check and saves a screenshot:
// how docs/screenshot.png is made.
//
//	go run ./internal/tools/screenshot -base http://localhost:8080 -email ada@example.com -password ... -session /sessions/<id> -command "crictl ps" -top -height 1000
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podpath/podpath/internal/browser"
)

func main() {
	base := flag.String("base", "http://localhost:8080", "podpath URL")
	email := flag.String("email", "", "account email")
	password := flag.String("password", "", "account password")
	session := flag.String("session", "", "lab page path, /sessions/<id>")
	command := flag.String("command", "crictl pods", "command to type in the first terminal")
	check := flag.Bool("check", true, "press Check")
	run := flag.Bool("run", false, "first press the step's first \"run in terminal\" button")
	width := flag.Int("width", 1440, "window width")
	height := flag.Int("height", 900, "window height")
	out := flag.String("out", "docs/screenshot.png", "PNG to write")
	top := flag.Bool("top", false, "show the top of the lab guide (steps and path diagram) rather than the current step")
	flag.Parse()

	ctx, cancel, err := browser.New(context.Background(), *width, *height)
	if err != nil {
		log.Fatal(err)
	}
	defer cancel()
	ctx, stop := context.WithTimeout(ctx, 10*time.Minute)
	defer stop()
	steps := []chromedp.Action[chromedp.Void]{
		chromedp.EmulateViewport(int64(*width), int64(*height)),
		chromedp.Navigate(*base + "/login"),
		chromedp.SendKeys(chromedp.CSS(`input[name=email]`), *email),
		chromedp.SendKeys(chromedp.CSS(`input[name=password]`), *password),
		chromedp.Submit(chromedp.CSS(`input[name=password]`)),
		chromedp.WaitVisible(chromedp.CSS(`.labs`)),
		chromedp.Navigate(*base + *session),
		chromedp.WaitVisible(chromedp.CSS(`.term-tab`)),
		chromedp.Sleep(3 * time.Second),
		chromedp.Click(chromedp.CSS(`.term:not([hidden]) .xterm-screen`)),
		chromedp.Focus(chromedp.CSS(`.term:not([hidden]) textarea`)),
		browser.InsertText(*command),
		browser.PressEnter(),
		chromedp.Sleep(2 * time.Second),
	}
	if *run {
		steps = append(steps, chromedp.Click(chromedp.CSS(`#step-body .code-run`)), chromedp.Sleep(15*time.Second))
	}
	if *check {
		steps = append(steps, chromedp.Click(chromedp.CSS(`#check-btn`)))
	}
	if err := chromedp.Do(ctx, steps...); err != nil {
		log.Fatal(err)
	}
	if *check {
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](`document.querySelectorAll("#results .result").length > 0`, chromedp.WithPollingTimeout(3*time.Minute))); err != nil {
			log.Fatal(err)
		}
		scroll := `document.querySelector("#step-body").offsetTop - 240`
		if *top {
			scroll = "0"
		}
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector(".guide").scrollTop = `+scroll+`, true)`)); err != nil {
			log.Fatal(err)
		}
	}
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, png, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s", *out)
}
