package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// AdminPoolView is GET /api/admin/pool: the warm pool and the host's room.
type AdminPoolView struct {
	Pool     any `json:"pool"`
	Capacity any `json:"capacity"`
}

func (s *Server) apiAdminPool(c echo.Context) error {
	return c.JSON(http.StatusOK, AdminPoolView{Pool: s.engine.Pool(), Capacity: s.engine.Usage()})
}
