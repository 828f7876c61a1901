package gate

import (
	"reflect"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// FuzzJudgeShell checks, for any command: judging never panics (the
// internal judge is called, without Judge's recover), judging twice gives
// the same judgement, and a command whose parse holds a command or
// process substitution is never allowed, and is not allowed part by
// part either (so the final safety net in script is not all that
// catches it). More seeds live in testdata/fuzz/FuzzJudgeShell.
func FuzzJudgeShell(f *testing.F) {
	for _, seed := range []string{
		benchCommand,
		"echo $(id)",
		"cat <<'EOF'\n$(id)\nEOF",
		`bash -c 'ls; echo $(id)'`,
		"cd src && cat ../go.mod",
		"a[$(id)]=1 ls",
		"{ ls; } > out/x",
	} {
		f.Add(seed)
	}
	fx := newFixture(f)
	g := fx.gate(f, testPolicy())
	f.Fuzz(func(t *testing.T, cmd string) {
		req := Request{Kind: KindShell, Command: cmd}
		first := g.judge(req)
		second := g.judge(req)
		if !judgementsEqual(first, second) {
			t.Fatalf("judging %q twice differed:\n%+v\n%+v", cmd, first, second)
		}
		if !substitutionInParse(cmd) {
			return
		}
		if first.Decision == Allow {
			t.Fatalf("%q holds a substitution but was allowed: %s", cmd, first.Reason)
		}
		allParts := len(first.Parts) > 0
		for _, p := range first.Parts {
			allParts = allParts && p.Decision == Allow
		}
		if allParts {
			t.Fatalf("%q holds a substitution but every part was allowed: %+v", cmd, first.Parts)
		}
	})
}

// substitutionInParse parses cmd as bash and looks for a command or
// process substitution anywhere in the tree. It walks the tree by
// reflection, so it shares no code with the gate's walk (nor with
// syntax.Walk).
func substitutionInParse(cmd string) bool {
	if len(cmd) > maxCommandBytes || strings.ContainsRune(cmd, 0) {
		return false
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
	if err != nil {
		return false
	}
	substType := reflect.TypeFor[*syntax.CmdSubst]()
	procType := reflect.TypeFor[*syntax.ProcSubst]()
	seen := map[uintptr]bool{}
	var visit func(v reflect.Value) bool
	visit = func(v reflect.Value) bool {
		switch v.Kind() {
		case reflect.Interface:
			if v.IsNil() {
				return false
			}
			return visit(v.Elem())
		case reflect.Pointer:
			if v.IsNil() {
				return false
			}
			if v.Type() == substType || v.Type() == procType {
				return true
			}
			if seen[v.Pointer()] {
				return false
			}
			seen[v.Pointer()] = true
			return visit(v.Elem())
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				if visit(v.Field(i)) {
					return true
				}
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				if visit(v.Index(i)) {
					return true
				}
			}
		}
		return false
	}
	return visit(reflect.ValueOf(file))
}

func TestSubstitutionInParse(t *testing.T) {
	cases := map[string]bool{
		"echo $(id)":                    true,
		"echo `id`":                     true,
		"diff <(a) <(b)":                true,
		"cat <<EOF\n$(id)\nEOF":         true,
		"cat <<'EOF'\n$(id)\nEOF":       false,
		"echo '$(id)'":                  false,
		"echo ${x:-$(id)}":              true,
		"a[$(id)]=1":                    true,
		"bash -c 'echo $(id)'":          false, // inside a string, for the gate's nested parse
		"ls (":                          false,
		"echo $(( $(id) ))":             true,
		"for x in $(ls); do :; done":    true,
		"case $(id) in *) ;; esac":      true,
		"[[ $(id) == x ]]":              true,
		"f() { echo $(id); }":           true,
		"echo hi > $(mktemp)":           true,
		"coproc $(id)":                  true,
		"(( $(id) ))":                   true,
		"declare x=$(id)":               true,
		"echo plain":                    false,
		"x=1; echo \"$x\" >> out.txt":   false,
		"echo ${x/$(a)/b}":              true,
		"echo ${x:$(a):1}":              true,
		"select x in $(ls); do :; done": true,
	}
	for cmd, want := range cases {
		if got := substitutionInParse(cmd); got != want {
			t.Errorf("substitutionInParse(%q) = %v, want %v", cmd, got, want)
		}
	}
}
