// Package catalogtest checks, from an engine's own tests, that the settings
// the engine reads are the ones the catalog declares for it.
package catalogtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/internal/locate"
)

// Keys returns the string values of the exported constants, in the Go
// files of the package in dir (tests left out), whose names start with
// prefix: an engine's setting keys (codex.KeyAuth, copilot.ConfigAuth).
func Keys(t testing.TB, dir, prefix string) []string {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	var keys []string
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || !strings.HasPrefix(name.Name, prefix) || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatal(err)
					}
					keys = append(keys, v)
				}
			}
		}
	}
	return keys
}

// CheckDeclared fails the test unless the catalog's settings of engine
// are exactly keys, plus locate's path and enginesDir when located (an
// engine whose CLI internal/locate finds reads those too).
func CheckDeclared(t testing.TB, engine string, located bool, keys []string) {
	t.Helper()
	e, ok := catalog.Lookup(engine)
	if !ok {
		t.Fatalf("the catalog has no engine %s", engine)
	}
	if located {
		keys = append(keys, locate.KeyPath, locate.KeyEnginesDir)
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	declared := slices.Sorted(slices.Values(e.Keys()))
	if !slices.Equal(keys, declared) {
		t.Fatalf("the %s engine reads the settings %v; internal/engines/catalog declares %v: declare each there (its type and doc), and in docs/engines-%s.md", engine, keys, declared, engine)
	}
}
