package gate

import (
	"strings"
	"testing"
)

func literalWords(s string) []word {
	var out []word
	for _, f := range strings.Fields(s) {
		out = append(out, word{value: f, static: true})
	}
	return out
}

func TestPatternMatch(t *testing.T) {
	cases := []struct {
		pattern, command string
		want             bool
	}{
		{"git status|diff|log *", "git status", true},
		{"git status|diff|log *", "git log --oneline", true},
		{"git status|diff|log *", "git push", false},
		{"git status|diff|log *", "git", false},
		{"go test *", "go test ./...", true},
		{"go test *", "go testx ./...", false},
		{"npm run build|test", "npm run build", true},
		{"npm run build|test", "npm run build --watch", false},
		{"npm run build|test", "npm run", false},
		{"ls *", "ls", true},
		{"ls *", "lsof", false},
		{"make test-*", "make test-unit", true},
		{"make test-*", "make test-", true},
		{"make test-*", "make build", false},
		{"make *-unit|lint", "make test-unit", true},
		{"docker compose up|down", "docker compose up", true},
		{"a *b*c", "a xbyc", true},
		{"a *b*c", "a xbycd", false},
		{"cat *", "cat a b c", true},
		{"x * y", "x anything y", true},
		{"x * y", "x y", false},
	}
	for _, tc := range cases {
		p, err := compilePattern(tc.pattern)
		if err != nil {
			t.Fatalf("compile %q: %v", tc.pattern, err)
		}
		if got := p.match(literalWords(tc.command)); got != tc.want {
			t.Errorf("%q matching %q = %v, want %v", tc.pattern, tc.command, got, tc.want)
		}
	}
}

func TestPatternNeverMatchesUnknownWordsOutsideTheTail(t *testing.T) {
	p, err := compilePattern("git status *")
	if err != nil {
		t.Fatal(err)
	}
	dynamic := word{value: "", static: false}
	glob := word{value: "st*", static: true, glob: true}
	cases := [][]word{
		{{value: "git", static: true}, dynamic},
		{{value: "git", static: true}, glob},
		{dynamic, {value: "status", static: true}},
	}
	for _, words := range cases {
		if p.match(words) {
			t.Errorf("%q matched %+v", p.text, words)
		}
	}
	tail := []word{{value: "git", static: true}, {value: "status", static: true}, dynamic, glob}
	if !p.match(tail) {
		t.Errorf("%q should match unknown words under its trailing star", p.text)
	}
}

func TestCompilePatternErrors(t *testing.T) {
	for _, s := range []string{"", "   ", "git a||b", "git |a", strings.Repeat("x", maxPatternBytes+1), strings.Repeat("a ", maxPatternWords+1)} {
		if _, err := compilePattern(s); err == nil {
			t.Errorf("compilePattern(%q) succeeded", s)
		}
	}
	for _, s := range []string{"*", "g* status", "sudo *", "env|ls *", "bash -c *", "xargs *", "awk *", "eval *"} {
		if _, err := compileAllowPattern(s); err == nil {
			t.Errorf("compileAllowPattern(%q) succeeded", s)
		}
	}
}

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pat, s string
		want   bool
	}{
		{"", "", true},
		{"*", "", true},
		{"*", "anything", true},
		{"a*", "a", true},
		{"*a", "ba", true},
		{"*a", "ab", false},
		{"a*b*c", "aXbYc", true},
		{"a*b*c", "aXbY", false},
		{"**", "x", true},
		{"a?", "ab", false}, // only * is special
		{"a?", "a?", true},
		{strings.Repeat("*a", 30), strings.Repeat("a", 29), false},
	}
	for _, tc := range cases {
		if got := globMatch(tc.pat, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", tc.pat, tc.s, got, tc.want)
		}
	}
}

func TestUnsafeSedScript(t *testing.T) {
	safe := []string{
		"1,10p", "s/a/b/g", "s|/usr|/opt|", `s/a\/b/c/`, "/^#/d", "$d", "1~2p", "10q", "y/abc/xyz/",
		"s/a/b/;s/c/d/2", "/start/,/end/p", "2,+3d", "=", "n;p", `\,x,d`, "s/x/y/I", "a hello",
		"/x/!d", "{p;d}",
	}
	for _, s := range safe {
		if why := unsafeSedScript(s); why != "" {
			t.Errorf("unsafeSedScript(%q) = %q, want safe", s, why)
		}
	}
	unsafe := []string{
		"s/a/b/e", "1e id", "e", "w /tmp/x", "s/a/b/w /tmp/x", "r /etc/passwd", "R x", "W x",
		"s/a/b", "/unterminated", ":a;b a", "v", "F", "1,",
	}
	for _, s := range unsafe {
		if unsafeSedScript(s) == "" {
			t.Errorf("unsafeSedScript(%q) = safe, want unsafe", s)
		}
	}
}
