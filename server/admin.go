package server

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/podpath/podpath/store"
)

// requireAdmin lets only admins through (after requireUserAPI).
func (s *Server) requireAdmin(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if u := currentUser(c); u == nil || u.Role != store.RoleAdmin {
			return apiError(http.StatusForbidden, "only an admin may see this")
		}
		return next(c)
	}
}

// AdminPoolView is GET /api/admin/pool: the warm pool and the host's room.
type AdminPoolView struct {
	Pool     any `json:"pool"`
	Capacity any `json:"capacity"`
}

func (s *Server) apiAdminPool(c echo.Context) error {
	return c.JSON(http.StatusOK, AdminPoolView{Pool: s.engine.Pool(), Capacity: s.engine.Usage()})
}
