package catalog

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the settings tables in docs/engines-*.md")

// Each engine's page lists its settings as the catalog declares them: the
// table between the markers is generated (go test -update rewrites it).
func TestDocsTablesAreTheCatalogs(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range Engines() {
		if len(e.Settings) == 0 {
			continue
		}
		path := filepath.Join(root, e.Doc)
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		start := strings.Index(text, DocsStart(e.Name))
		end := strings.Index(text, DocsEnd)
		if start < 0 || end < start {
			t.Errorf("%s has no settings table between %q and %q", e.Doc, DocsStart(e.Name), DocsEnd)
			continue
		}
		body := start + len(DocsStart(e.Name)) + 1
		want := DocsTable(e)
		if text[body:end] == want {
			continue
		}
		if *update {
			if err := os.WriteFile(path, []byte(text[:body]+want+text[end:]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s: the settings table is not the catalog's; run go test ./internal/engines/catalog -update\nwant:\n%s", e.Doc, want)
	}
}
