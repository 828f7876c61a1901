package httpapi

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/schema"
)

// routePattern finds the routes this package registers:
// mux.HandleFunc("GET "+v+"/sessions/{id}", ...).
var routePattern = regexp.MustCompile(`HandleFunc\("(GET|POST|PUT|PATCH|DELETE) "\s*\+\s*v\s*\+\s*"([^"]*)"`)

// TestEveryRouteIsInTheSchema: the routes the API serves and the routes
// its OpenAPI document describes are the same.
func TestEveryRouteIsInTheSchema(t *testing.T) {
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		src, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range routePattern.FindAllStringSubmatch(string(src), -1) {
			served = append(served, m[1]+" /v1"+m[2])
		}
	}
	var described []string
	for _, r := range schema.Default().Routes {
		described = append(described, r.Method+" "+r.Path)
	}
	slices.Sort(served)
	slices.Sort(described)
	if len(served) == 0 || !slices.Equal(served, described) {
		t.Fatalf("routes served:\n  %s\nroutes in internal/schema's registry:\n  %s", strings.Join(served, "\n  "), strings.Join(described, "\n  "))
	}
}

func TestServesItsOpenAPIDocument(t *testing.T) {
	f := newScriptFixture(t, "")
	code, raw := f.do("GET", "/v1/openapi.json", "")
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); code != 200 || err != nil || doc.OpenAPI != "3.1.0" || doc.Paths["/v1/events"] == nil {
		t.Fatalf("GET /v1/openapi.json: %d %v %.200s", code, err, raw)
	}
}
