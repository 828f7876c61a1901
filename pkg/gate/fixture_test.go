package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixture is a worktree with files, credential files and symlinks
// pointing in and out, next to an outside directory and a home
// directory, all in the test's temporary directory.
type fixture struct {
	wt, outside, home string
}

func newFixture(t testing.TB) fixture {
	t.Helper()
	fx := fixture{wt: t.TempDir(), outside: t.TempDir(), home: t.TempDir()}
	files := map[string]string{
		filepath.Join(fx.wt, "go.mod"):                   "module example\n",
		filepath.Join(fx.wt, "src", "main.go"):           "package main\n",
		filepath.Join(fx.wt, ".git", "config"):           "[core]\n",
		filepath.Join(fx.wt, ".git", "HEAD"):             "ref: refs/heads/main\n",
		filepath.Join(fx.wt, ".env"):                     "TOKEN=x\n",
		filepath.Join(fx.wt, ".corral", "settings.json"): "{}\n",
		filepath.Join(fx.outside, "secret.txt"):          "secret\n",
		filepath.Join(fx.home, ".ssh", "id_rsa"):         "key\n",
		filepath.Join(fx.home, ".aws", "credentials"):    "[default]\n",
	}
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		filepath.Join(fx.wt, "out"):    fx.outside,                              // a directory outside
		filepath.Join(fx.wt, "secret"): filepath.Join(fx.outside, "secret.txt"), // a file outside
		filepath.Join(fx.wt, "inner"):  "src",                                   // a directory inside
		filepath.Join(fx.wt, "up"):     "..",                                    // the worktree's parent
	}
	for link, target := range links {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return fx
}

// expand replaces {{wt}}, {{out}} and {{home}} with the fixture's
// directories.
func (fx fixture) expand(s string) string {
	return strings.NewReplacer("{{wt}}", fx.wt, "{{out}}", fx.outside, "{{home}}", fx.home).Replace(s)
}

// testPolicy is the built-in policy plus the patterns the tables rely
// on.
func testPolicy() Policy {
	p := DefaultPolicy()
	p.Allow = append(p.Allow,
		"go test *", "npm run build|test", "make build|test", "./scripts/check.sh",
		"cp *", "mv *", "rm *", "mkdir *", "touch *", "ln *", "chmod *", "tee *", "dd *",
		"python -m pytest *", "curl *", "git add|commit *", "gofmt *",
	)
	p.Deny = append(p.Deny, "make deploy *", "git push --force *")
	return p
}

func (fx fixture) gate(t testing.TB, p Policy) *Gate {
	t.Helper()
	g, err := New(p, fx.wt, WithHomeDir(fx.home))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// judgeCase is one row of the judgement tables.
type judgeCase struct {
	name string
	req  string // the command, or the path or URL for other kinds
	want Decision
	cat  Category // checked when set
	// reason, when set, must appear in the judgement's reason.
	reason string
}

func runJudgeCases(t *testing.T, fx fixture, g *Gate, kind Kind, cases []judgeCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Kind: kind}
			in := fx.expand(tc.req)
			switch kind {
			case KindShell:
				req.Command = in
			case KindEdit, KindRead:
				req.Path = in
			case KindFetch:
				req.URL = in
			case KindMCP:
				req.Server, req.Tool, _ = strings.Cut(in, "/")
			}
			got := g.Judge(req)
			if got.Decision != tc.want {
				t.Fatalf("Judge(%q) = %s (%s: %s), want %s", in, got.Decision, got.Category, got.Reason, tc.want)
			}
			if tc.cat != "" && got.Category != tc.cat {
				t.Errorf("Judge(%q) category = %s (%s), want %s", in, got.Category, got.Reason, tc.cat)
			}
			if tc.reason != "" && !strings.Contains(got.Reason, tc.reason) {
				t.Errorf("Judge(%q) reason = %q, want it to mention %q", in, got.Reason, tc.reason)
			}
			if got.Reason == "" {
				t.Errorf("Judge(%q) has no reason", in)
			}
		})
	}
}
