// Package browser drives Debian's headless Chromium through chromedp, for
// the UI tests and for README screenshots.
package browser

import (
	"context"
	"os"
	"os/exec"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
)

// Path finds Chromium: $CHROMIUM, then Debian's /usr/bin/chromium.
func Path() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// New starts a headless Chromium with a fresh profile and returns a browser
// tab context; cancel closes it.
func New(ctx context.Context, width, height int) (context.Context, context.CancelFunc, error) {
	path, err := Path()
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "podpath-chromium-")
	if err != nil {
		return nil, nil, err
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(dir),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(width, height),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	tctx, tcancel := chromedp.NewContext(actx)
	if err := chromedp.Do(tctx, chromedp.Navigate("about:blank")); err != nil {
		tcancel()
		acancel()
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return tctx, func() {
		tcancel()
		acancel()
		os.RemoveAll(dir)
	}, nil
}

// InsertText types text into the focused element as one input event, the
// way an input method does. (Key events for every character make xterm.js
// see each printable key twice under CDP.)
func InsertText(text string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, input.InsertText, input.InsertTextParams{Text: text})
		return err
	})
}

// PressEnter presses Enter once (a raw key-down and a key-up: no second,
// character event for the same key).
func PressEnter() chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeRawKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := chromedp.Call(ctx, input.DispatchKeyEvent, input.DispatchKeyEventParams{
				Type: typ, Key: "Enter", Code: "Enter", WindowsVirtualKeyCode: 13, NativeVirtualKeyCode: 13,
			}); err != nil {
				return err
			}
		}
		return nil
	})
}
