package server

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
	"github.com/podpath/podpath/labs"
)

// Images of a lab's folder, for its texts: a Killercoda scenario's
// ![](./img/arch.png) or <img src="diagram.svg"> shows the file of the
// scenario's folder. Only images are served: a lab folder also holds
// verify scripts and solutions.
var labImageTypes = map[string]string{
	".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
	".webp": "image/webp", ".svg": "image/svg+xml",
}

// labFile serves an image of a lab's folder: GET /labs/:lab/files/*.
func (s *Server) labFile(c echo.Context) error {
	l, err := s.findLab(c.Param("lab"))
	if err != nil {
		return err
	}
	name := c.Param("*")
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	typ, ok := labImageTypes[strings.ToLower(path.Ext(name))]
	if !ok {
		return errs.E(errs.NotFound, fmt.Sprintf("%.80q is not an image (%s): only a lab's images are served", name, imageExts()))
	}
	if l.Files == nil {
		return errs.E(errs.NotFound, "this lab has no folder")
	}
	b, err := l.Files(name)
	if err != nil {
		return errs.E(errs.NotFound, fmt.Sprintf("lab %s has no image %.80q", l.ID, name))
	}
	h := c.Response().Header()
	h.Set("Cache-Control", "public, max-age=300")
	// An SVG opened on its own runs in no origin of ours.
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	return c.Blob(http.StatusOK, typ, b)
}

func imageExts() string {
	return ".png, .jpg, .jpeg, .gif, .webp, .svg"
}

// relImgRE is an image whose address is relative to the text's folder.
var relImgRE = regexp.MustCompile(`<img src="([^"]*)"`)

// labImages points a lab text's relative image addresses at the lab's
// folder (labFile); absolute ones, data: and those that climb out of the
// folder stay as they are.
func labImages(l *labs.Lab, html string) string {
	if !strings.Contains(html, "<img ") {
		return html
	}
	return relImgRE.ReplaceAllStringFunc(html, func(m string) string {
		src := relImgRE.FindStringSubmatch(m)[1]
		raw := strings.ReplaceAll(src, "&amp;", "&")
		if raw == "" || strings.Contains(raw, ":") || strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "#") {
			return m
		}
		clean := path.Clean(strings.SplitN(strings.SplitN(raw, "?", 2)[0], "#", 2)[0])
		if clean == "." || strings.HasPrefix(clean, "..") {
			return m
		}
		return `<img src="/labs/` + l.ID + `/files/` + clean + `"`
	})
}
