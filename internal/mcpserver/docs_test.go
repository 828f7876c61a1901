package mcpserver

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var updateDocs = flag.Bool("update", false, "rewrite the tool schemas in docs/mcp.md")

// schemaBlock is a tool's schema in docs/mcp.md, between its markers.
var schemaBlock = regexp.MustCompile("(?s)<!-- schema:([a-z_]+) -->\n```json\n(?:[^`]*?\n)?```\n<!-- /schema -->")

// docs/mcp.md shows every tool's input schema exactly as the server
// advertises it (go test -run TestTheDocsShowEveryToolsSchema -update
// rewrites them).
func TestTheDocsShowEveryToolsSchema(t *testing.T) {
	srv := New(Config{})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "docs"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]string{}
	for _, tool := range tools.Tools {
		raw, _ := json.MarshalIndent(tool.InputSchema, "", "  ")
		schemas[tool.Name] = string(raw)
	}
	path := filepath.Join("..", "..", "docs", "mcp.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	out := schemaBlock.ReplaceAllStringFunc(string(doc), func(block string) string {
		name := schemaBlock.FindStringSubmatch(block)[1]
		seen[name] = true
		want := "<!-- schema:" + name + " -->\n```json\n" + schemas[name] + "\n```\n<!-- /schema -->"
		if schemas[name] == "" {
			t.Errorf("docs/mcp.md shows a schema of %s, which is no tool", name)
		} else if block != want && !*updateDocs {
			t.Errorf("docs/mcp.md's schema of %s is not the server's (run with -update):\n%s", name, schemas[name])
		}
		return want
	})
	for name := range schemas {
		if !seen[name] {
			t.Errorf("docs/mcp.md shows no schema of %s (add <!-- schema:%s -->\\n```json\\n```\\n<!-- /schema --> and run with -update)", name, name)
		}
		if !strings.Contains(string(doc), "### "+name) {
			t.Errorf("docs/mcp.md has no section ### %s", name)
		}
	}
	if *updateDocs {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
