package server

import "testing"

// safeNext keeps sign-in redirects on this site. Browsers drop tabs and
// newlines anywhere in a URL and read a backslash as a slash, so
// "/\t/evil.example" is "//evil.example": another origin.
func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"":                           "/",
		"/":                          "/",
		"/sessions/6d816d57?lang=zh": "/sessions/6d816d57?lang=zh",
		"/labs#top":                  "/labs#top",
		"//evil.example":             "/",
		"/\\evil.example":            "/",
		"\\/evil.example":            "/",
		"/\t/evil.example":           "/",
		"/\n/evil.example":           "/",
		"/\r/evil.example":           "/",
		"\t//evil.example":           "/",
		"/\x00/evil.example":         "/",
		"/ /evil.example":            "/",
		"/\u3000/evil.example":       "/",
		"https://evil.example":       "/",
		"javascript:alert(1)":        "/",
		"evil.example":               "/",
		"/%09/evil.example":          "/%09/evil.example", // stays a path on this site: the browser keeps %09 encoded
	} {
		if got := safeNext(next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}
