package schema_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/schema"
	"github.com/corral-dev/corral/internal/schema/schematest"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// root is the module's root, two folders up from this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const regenerate = "run `make generate` (go generate ./internal/schema) and commit the result"

func TestGeneratedFilesAreCurrent(t *testing.T) {
	for _, a := range schema.Artefacts {
		t.Run(string(a.Format), func(t *testing.T) {
			want, err := schema.Render(a.Format)
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(filepath.Join(root(t), filepath.FromSlash(a.Path)))
			if err != nil {
				t.Fatalf("%s: %v; %s", a.Path, err, regenerate)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s is stale: it is not what the Go types generate; %s", a.Path, regenerate)
			}
		})
	}
}

func TestCommentsAreCurrent(t *testing.T) {
	got, err := schema.HarvestComments(root(t))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, schema.Comments) {
		for k, v := range got {
			if schema.Comments[k] != v {
				t.Errorf("comment of %s changed: %q", k, v)
			}
		}
		for k := range schema.Comments {
			if _, ok := got[k]; !ok {
				t.Errorf("comment of %s is gone", k)
			}
		}
		t.Fatalf("comments_gen.go is stale; %s", regenerate)
	}
}

func TestRegistryDescribesEverything(t *testing.T) {
	if err := schema.Err(); err != nil {
		t.Fatal(err)
	}
}

// constsOf reads the values of the constants of a named string type from
// the source of the package in dir.
func constsOf(t *testing.T, dir, typ string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				id, ok := vs.Type.(*ast.Ident)
				if !ok || id.Name != typ {
					continue
				}
				for _, v := range vs.Values {
					if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
						s, _ := strconv.Unquote(lit.Value)
						vals = append(vals, s)
					}
				}
			}
		}
	}
	return vals
}

// TestEnumsHoldEveryConstant: a constant added to a named type the schema
// enumerates must be added to the registry too.
func TestEnumsHoldEveryConstant(t *testing.T) {
	defs := schema.Defs()
	for t2, vals := range schema.Default().Enums {
		if t2.Kind() != reflect.String {
			continue // (hunks.Op encodes itself)
		}
		rel := strings.TrimPrefix(t2.PkgPath(), schema.Module+"/")
		consts := constsOf(t, filepath.Join(root(t), rel), t2.Name())
		if !slices.Equal(sorted(consts), sorted(vals)) {
			t.Errorf("%s: the source has %v, the registry %v", t2, consts, vals)
		}
		name := t2.Name()
		if n, ok := schema.Default().Names[t2]; ok {
			name = n
		}
		if def := defs[name]; def == nil || !slices.Equal(def.Enum, vals) {
			t.Errorf("%s: definition %+v", t2, def)
		}
	}
	consts := constsOf(t, filepath.Join(root(t), "pkg", "event"), "Type")
	if !slices.Equal(sorted(consts), sorted(defs["EventType"].Enum)) {
		t.Errorf("EventType: the source has %v, the registry %v", consts, defs["EventType"].Enum)
	}
	var names []string
	for _, c := range command.Registry {
		names = append(names, string(c.Name))
	}
	if !slices.Equal(sorted(names), sorted(defs["Cmd"].Enum)) {
		t.Errorf("Cmd: command.Registry has %v, the schema %v", names, defs["Cmd"].Enum)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestEveryReferenceResolves walks both documents for $refs.
func TestEveryReferenceResolves(t *testing.T) {
	for _, f := range []schema.Format{schema.FormatJSONSchema, schema.FormatOpenAPI} {
		raw, err := schema.Render(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		var walk func(v any)
		walk = func(v any) {
			switch x := v.(type) {
			case map[string]any:
				if r, ok := x["$ref"].(string); ok {
					if !resolves(doc, r) {
						t.Errorf("%s: $ref %s resolves to nothing", f, r)
					}
				}
				for _, c := range x {
					walk(c)
				}
			case []any:
				for _, c := range x {
					walk(c)
				}
			}
		}
		walk(doc)
	}
}

func resolves(doc any, r string) bool {
	path, ok := strings.CutPrefix(r, "#/")
	if !ok {
		return false
	}
	cur := doc
	for _, p := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[p]; !ok {
			return false
		}
	}
	return true
}

// TestEveryDefinitionCompiles compiles each definition with a validator
// of JSON Schema 2020-12, which checks it against the metaschema.
func TestEveryDefinitionCompiles(t *testing.T) {
	for name := range schema.Defs() {
		if _, err := schematest.Compile(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestSchemaFollowsEncodingJSON: what Go writes validates, and the schema
// refuses what Go would never write.
func TestSchemaFollowsEncodingJSON(t *testing.T) {
	code := 3
	good := map[string]any{
		"Spec":          wire.Spec{ID: "s", Engine: "script", Goal: &wire.Goal{Text: "tests pass"}},
		"Status":        command.Status{Session: "s", State: wire.StateIdle, Queued: []event.Queued{}, OpenAsks: []string{}, PendingEdit: []string{}},
		"Message":       wireLine(t, &wire.TermExit{TermID: "t", ExitCode: &code}),
		"Reply":         wire.ErrReply(wire.Errorf(wire.CodeNotFound, "no")),
		"Command":       commandJSON(t, command.Send{Text: "hi"}),
		"SessionEvent":  event.Event{Seq: 1, Type: event.GoalCleared},
		"TurnEndedData": event.TurnEndedData{Turn: 1, Outcome: "done"},
	}
	for def, v := range good {
		raw, _ := json.Marshal(v)
		if err := schematest.Validate(def, raw); err != nil {
			t.Errorf("%s written by Go is invalid: %v\n%s", def, err, raw)
		}
	}
	bad := []struct{ def, raw string }{
		{"Command", `{"cmd":"send"}`},   // send needs text
		{"Command", `{"cmd":"launch"}`}, // no such command
		{"SessionEvent", `{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"turnEnded"}`}, // turnEnded has data
		{"Status", `{"session":"s"}`},                               // fields missing
		{"Error", `{"message":"m","code":"oops","statusCode":500}`}, // no such code
	}
	for _, b := range bad {
		if err := schematest.Validate(b.def, []byte(b.raw)); err == nil {
			t.Errorf("%s accepted %s", b.def, b.raw)
		}
	}
}

// wireLine is a message as the codec writes it.
func wireLine(t *testing.T, m wire.Message) json.RawMessage {
	t.Helper()
	line, err := wire.AppendMessage(nil, "", m)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(line, []byte("\n"))
}

// commandJSON is a command as every transport carries it.
func commandJSON(t *testing.T, req command.Request) json.RawMessage {
	t.Helper()
	raw, err := command.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
