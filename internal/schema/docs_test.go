package schema_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/schema"
)

// The docs' tables are written by hand, for people; these tests hold them
// to the schema: everything documented exists, everything that exists is
// documented.

// section is one ### heading of a doc and the lines under it.
type section struct {
	title string
	lines []string
}

// readDoc returns docs/doc from the heading from (the whole doc when
// empty) up to the next heading of the same level.
func readDoc(t *testing.T, doc, from string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root(t), "docs", doc))
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if from == "" {
		return text
	}
	i := strings.Index(text, "\n"+from+"\n")
	if i < 0 {
		t.Fatalf("docs/%s has no heading %q", doc, from)
	}
	text = text[i+1:]
	level := from[:strings.IndexByte(from, ' ')+1] // "## "
	if j := strings.Index(text[len(from):], "\n"+level); j >= 0 {
		text = text[:len(from)+j]
	}
	return text
}

func sections(t *testing.T, doc, from string) []section {
	t.Helper()
	var out []section
	for _, line := range strings.Split(readDoc(t, doc, from), "\n") {
		if title, ok := strings.CutPrefix(line, "### "); ok {
			out = append(out, section{title: title})
			continue
		}
		if len(out) > 0 {
			out[len(out)-1].lines = append(out[len(out)-1].lines, line)
		}
	}
	return out
}

var firstCode = regexp.MustCompile("^\\|\\s*`([^`]+)`")

// tableFields returns the first-column names of the first table whose
// header's first cell is header, and whether there was one.
func tableFields(lines []string, header string) ([]string, bool) {
	var names []string
	in, found := false, false
	for _, l := range lines {
		switch {
		case !in && strings.HasPrefix(l, "| "+header+" |"):
			in, found = true, true
		case in && !strings.HasPrefix(l, "|"):
			return names, found
		case in:
			if m := firstCode.FindStringSubmatch(l); m != nil {
				names = append(names, strings.TrimSuffix(m[1], "?"))
			}
		}
	}
	return names, found
}

// props returns a definition's property names.
func props(t *testing.T, def string) []string {
	t.Helper()
	s := schema.Defs()[def]
	if s == nil || s.Properties == nil {
		t.Fatalf("no object definition %s", def)
	}
	var out []string
	for _, p := range *s.Properties {
		out = append(out, p.Name)
	}
	return out
}

func sameSet(t *testing.T, what string, documented, actual []string) {
	t.Helper()
	for _, d := range documented {
		if !slices.Contains(actual, d) {
			t.Errorf("%s: %q is documented but does not exist", what, d)
		}
	}
	for _, a := range actual {
		if !slices.Contains(documented, a) {
			t.Errorf("%s: %q exists but is not documented", what, a)
		}
	}
}

func TestEventsDocMatchesTheSchema(t *testing.T) {
	reg := schema.Default()
	documented := map[string]bool{}
	for _, sec := range sections(t, "events.md", "## Types") {
		fields, hasTable := tableFields(sec.lines, "field")
		for _, name := range strings.Split(sec.title, ", ") {
			documented[name] = true
			idx := slices.IndexFunc(reg.Events, func(e schema.Event) bool { return string(e.Type) == name })
			if idx < 0 {
				t.Errorf("docs/events.md documents %q, which is no event type", name)
				continue
			}
			def := schema.Defs()[schema.EventDef(reg.Events[idx].Type)]
			data := def.Properties.Get("data")
			switch {
			case data == nil && hasTable:
				t.Errorf("%s has no data, yet docs/events.md lists fields for it", name)
			case data == nil:
			case !hasTable:
				t.Errorf("docs/events.md lists no fields for %s", name)
			default:
				sameSet(t, "docs/events.md, "+name, fields, props(t, schema.RefName(data)))
			}
		}
	}
	for _, e := range reg.Events {
		if !documented[string(e.Type)] {
			t.Errorf("event type %s is not in docs/events.md", e.Type)
		}
	}
}

var codeToken = regexp.MustCompile("`([A-Za-z]+)\\??`")

func TestCommandsDocMatchesTheSchema(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(root(t), "docs", "commands.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string][]string{}
	in := false
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "| command | fields |"):
			in = true
		case in && !strings.HasPrefix(l, "|"):
			in = false
		case in:
			cells := strings.Split(l, "|")
			m := firstCode.FindStringSubmatch(l)
			if m == nil || len(cells) < 3 {
				continue
			}
			var fields []string
			for _, f := range codeToken.FindAllStringSubmatch(cells[2], -1) {
				fields = append(fields, f[1])
			}
			documented[m[1]] = fields
		}
	}
	for _, c := range schema.Default().Commands {
		fields, ok := documented[string(c.Name)]
		if !ok {
			t.Errorf("command %s is not in docs/commands.md's table", c.Name)
			continue
		}
		delete(documented, string(c.Name))
		var actual []string
		for _, p := range props(t, schema.CommandDef(c.Name)) {
			if p != "cmd" && p != "requestId" { // every command's, documented once
				actual = append(actual, p)
			}
		}
		sameSet(t, "docs/commands.md, "+string(c.Name), fields, actual)
	}
	for name := range documented {
		t.Errorf("docs/commands.md documents %q, which is no command", name)
	}
}

var routeHeading = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) (/\S+)`)

func TestAPIDocMatchesTheSchema(t *testing.T) {
	var documented, described []string
	secs := sections(t, "api.md", "")
	for _, sec := range secs {
		if m := routeHeading.FindStringSubmatch(sec.title); m != nil {
			documented = append(documented, m[1]+" "+m[2])
		}
	}
	for _, r := range schema.Default().Routes {
		described = append(described, r.Method+" "+r.Path)
	}
	sameSet(t, "docs/api.md's routes", documented, described)

	tables := []struct{ heading, header, def string }{
		{"The session object", "field", "Session"},
		{"POST /v1/sessions — create", "field", "Spec"},
		{"GET /v1/events — every session on one stream", "field", "FeedItem"},
	}
	for _, tc := range tables {
		i := slices.IndexFunc(secs, func(s section) bool { return s.title == tc.heading })
		if i < 0 {
			t.Errorf("docs/api.md has no section %q", tc.heading)
			continue
		}
		fields, ok := tableFields(secs[i].lines, tc.header)
		if !ok {
			t.Errorf("docs/api.md, %s: no table", tc.heading)
			continue
		}
		sameSet(t, "docs/api.md, "+tc.heading, fields, props(t, tc.def))
	}
}

func TestWireDocMatchesTheSchema(t *testing.T) {
	defs := schema.Defs()
	var documented []string
	for _, from := range []string{"## Parent to child", "## Child to parent"} {
		for _, sec := range sections(t, "wire.md", from) {
			documented = append(documented, strings.Split(sec.title, ", ")...)
		}
	}
	sameSet(t, "docs/wire.md's messages", documented, defs["Type"].Enum)
	codes, ok := tableFields(strings.Split(readDoc(t, "wire.md", "## Errors"), "\n"), "code")
	if !ok {
		t.Fatal("docs/wire.md's Errors section has no table of codes")
	}
	sameSet(t, "docs/wire.md's error codes", codes, defs["Code"].Enum)
}
