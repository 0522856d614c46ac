package server

import (
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/internal/errs"
)

// Text that reaches Postgres must be UTF-8 without NUL characters, or
// Postgres refuses it mid-request. Both ways in are checked once, here:
// JSON bodies in bindJSON (the raw bytes, then every decoded string) and
// form posts in checkFormText.

// badText says what is wrong with s, or "".
func badText(s string) string {
	switch {
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	case strings.IndexByte(s, 0) >= 0:
		return `holds a NUL character (\u0000)`
	}
	return ""
}

// checkText walks a decoded JSON request and refuses any string holding a
// NUL (invalid UTF-8 was refused before decoding: the decoder would have
// replaced it silently).
func checkText(v any) error {
	return walkText(reflect.ValueOf(v), "")
}

func walkText(v reflect.Value, field string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return walkText(v.Elem(), field)
		}
	case reflect.String:
		if why := badText(v.String()); why != "" {
			return errs.E(errs.Invalid, fmt.Sprintf("field %q %s; remove it", field, why))
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			if !t.Field(i).IsExported() {
				continue
			}
			name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
			if name == "" {
				name = t.Field(i).Name
			}
			if err := walkText(v.Field(i), name); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := walkText(v.Index(i), field); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if err := walkText(it.Key(), field); err != nil {
				return err
			}
			if err := walkText(it.Value(), field); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkURLText refuses a request whose path (a join code, a session id,
// a node) or query holds text Postgres would refuse, with a 400 that says
// so, before any handler reads it: GET /join/%00AB answered 500.
func checkURLText(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		bad := ""
		for _, v := range c.ParamValues() {
			if badText(v) != "" {
				bad = "address"
			}
		}
		for k, vs := range c.QueryParams() {
			for _, v := range append([]string{k}, vs...) {
				if badText(v) != "" {
					bad = fmt.Sprintf("query's %.40q parameter", strings.ToValidUTF8(k, "?"))
				}
			}
		}
		if bad == "" {
			return next(c)
		}
		return errs.E(errs.Invalid, fmt.Sprintf("the %s must be UTF-8 without NUL characters; correct the link and try again", bad))
	}
}

// checkFormText refuses a form post (a page's form, not the JSON API) with
// a field that is not UTF-8 or holds a NUL, before any handler reads it.
func checkFormText(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		ct := c.Request().Header.Get(echo.HeaderContentType)
		if isAPI(c) || !isWrite(c.Request().Method) ||
			!(strings.HasPrefix(ct, echo.MIMEApplicationForm) || strings.HasPrefix(ct, echo.MIMEMultipartForm)) {
			return next(c)
		}
		form, err := c.FormParams()
		if err != nil {
			return errs.E(errs.Invalid, "the form could not be read; reload the page and try again")
		}
		for k, vs := range form {
			for _, v := range append([]string{k}, vs...) {
				if badText(v) != "" {
					return errs.E(errs.Invalid, fmt.Sprintf("the form's %.40q field must be UTF-8 without NUL characters; correct it and send the form again", strings.ToValidUTF8(k, "?")))
				}
			}
		}
		return next(c)
	}
}
