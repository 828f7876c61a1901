package httpapi

import (
	"net/http"

	"github.com/corral-dev/corral/internal/schema"
)

// openAPI serves the OpenAPI document of this API, generated from its Go
// types (internal/schema).
func (s *server) openAPI(w http.ResponseWriter, r *http.Request) {
	b, err := schema.Render(schema.FormatOpenAPI)
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}
