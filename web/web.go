// Package web holds the pages' templates and static files (CSS, JS and the
// vendored xterm.js build), embedded in the binary.
package web

import "embed"

// Templates are the server's html/template files.
//
//go:embed templates/*.html
var Templates embed.FS

// Static is served under /static/.
//
//go:embed static
var Static embed.FS
