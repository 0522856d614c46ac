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
// scenario's folder. Only images are served (labs.ImageTypes): a lab folder
// also holds verify scripts and solutions.

// labFile serves an image of a lab's folder: GET /labs/:lab/files/*.
func (s *Server) labFile(c echo.Context) error {
	l, err := s.findLab(c.Param("lab"))
	if err != nil {
		return err
	}
	if l.Files == nil {
		return errs.E(errs.NotFound, "this lab has no folder")
	}
	return serveLabImage(c, l, l.Files)
}

// labSharedFile serves an image a Killercoda scenario's texts show from
// above its folder, by its path in the scenario's repository (as
// ../assets/logo.png in Killercoda's examples): GET /labs/:lab/shared/*.
// Only the images the lab's texts name are served.
func (s *Server) labSharedFile(c echo.Context) error {
	l, err := s.findLab(c.Param("lab"))
	if err != nil {
		return err
	}
	return serveLabImage(c, l, l.ReadShared)
}

func serveLabImage(c echo.Context, l *labs.Lab, read func(string) ([]byte, error)) error {
	name := c.Param("*")
	if u, err := url.PathUnescape(name); err == nil {
		name = u
	}
	typ, ok := labs.ImageTypes[strings.ToLower(path.Ext(name))]
	if !ok {
		return errs.E(errs.NotFound, fmt.Sprintf("%.80q is not an image (%s): only a lab's images are served", name, imageExts()))
	}
	b, err := read(name)
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

// relImgRE is an image, whatever attributes come before its address.
var relImgRE = regexp.MustCompile(`<img\s(?:[^>]*\s)?src="([^"]*)"`)

// labImages points a lab text's relative image addresses at the lab's
// folder (labFile), or at its repository for the images a Killercoda
// scenario shows from above its folder (labSharedFile); absolute ones,
// data: and others that climb out of the folder stay as they are.
func labImages(l *labs.Lab, html string) string {
	if !strings.Contains(html, "<img ") {
		return html
	}
	return relImgRE.ReplaceAllStringFunc(html, func(m string) string {
		sm := relImgRE.FindStringSubmatchIndex(m)
		src := m[sm[2]:sm[3]]
		raw := strings.ReplaceAll(src, "&amp;", "&")
		if raw == "" || strings.Contains(raw, ":") || strings.HasPrefix(raw, "/") || strings.HasPrefix(raw, "#") {
			return m
		}
		clean := path.Clean(strings.SplitN(strings.SplitN(raw, "?", 2)[0], "#", 2)[0])
		to := ""
		switch {
		case clean == ".":
			return m
		case strings.HasPrefix(clean, ".."):
			p, ok := l.SharedImage(clean)
			if !ok {
				return m
			}
			to = "/labs/" + l.ID + "/shared/" + p
		default:
			to = "/labs/" + l.ID + "/files/" + clean
		}
		return m[:sm[2]] + to + m[sm[3]:]
	})
}
