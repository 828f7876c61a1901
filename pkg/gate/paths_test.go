package gate

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestRealPath(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mustMkdir(t, filepath.Join(root, "a", "b"))
	mustSymlink(t, filepath.Join(root, "a", "b"), filepath.Join(root, "tob"))
	mustSymlink(t, outside, filepath.Join(root, "toout"))
	mustSymlink(t, "b", filepath.Join(root, "a", "rel"))
	mustSymlink(t, "loop2", filepath.Join(root, "loop1"))
	mustSymlink(t, "loop1", filepath.Join(root, "loop2"))
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		in, want string
	}{
		{root + "/a/b", root + "/a/b"},
		{root + "//a///b/", root + "/a/b"},
		{root + "/a/./b", root + "/a/b"},
		{root + "/a/b/..", root + "/a"},
		// ".." after a symlink goes to the parent of its target.
		{root + "/tob/..", root + "/a"},
		{root + "/tob/../../file", root + "/file"},
		{root + "/toout/new", outside + "/new"},
		{root + "/a/rel/x", root + "/a/b/x"},
		// The longest existing parent is resolved, the rest joined.
		{root + "/tob/missing/deeper", root + "/a/b/missing/deeper"},
		{root + "/missing/../a", root + "/a"},
		{root + "/file/below", root + "/file/below"},
	}
	for _, tc := range cases {
		got, err := realPath(tc.in)
		if err != nil {
			t.Errorf("realPath(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("realPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if _, err := realPath(root + "/loop1/x"); !errors.Is(err, errTooManyLinks) {
		t.Errorf("symlink loop: err = %v, want errTooManyLinks", err)
	}
	if _, err := realPath("relative"); err == nil {
		t.Error("a relative path was accepted")
	}
}

func TestSymlinkLoopIsAsked(t *testing.T) {
	fx := newFixture(t)
	mustSymlink(t, "loopb", filepath.Join(fx.wt, "loopa"))
	mustSymlink(t, "loopa", filepath.Join(fx.wt, "loopb"))
	g := fx.gate(t, testPolicy())
	for _, req := range []Request{
		{Kind: KindShell, Command: "cat loopa"},
		{Kind: KindEdit, Path: "loopa/x"},
	} {
		if j := g.Judge(req); j.Decision != Ask {
			t.Errorf("Judge(%+v) = %s, want ask", req, j.Decision)
		}
	}
}

func TestClassifyPath(t *testing.T) {
	fx := newFixture(t)
	g := fx.gate(t, testPolicy())
	cases := []struct {
		shown string
		want  sensitivity
	}{
		{fx.wt + "/.git/config", controlPath},
		{fx.wt + "/sub/.git/HEAD", controlPath},
		{fx.wt + "/.corral/settings.json", controlPath},
		{fx.wt + "/.githooks/pre-push", controlPath},
		{fx.wt + "/.env", credentialPath},
		{fx.wt + "/config/.env.production", credentialPath},
		{fx.wt + "/.envrc", credentialPath},
		{fx.wt + "/certs/server.pem", credentialPath},
		{fx.wt + "/deploy/id_ed25519", credentialPath},
		{fx.wt + "/.npmrc", credentialPath},
		{fx.home + "/.ssh/known_hosts", credentialPath},
		{fx.home + "/.aws/config", credentialPath},
		{fx.home + "/.config/gh/hosts.yml", credentialPath},
		{fx.wt + "/src/main.go", notSensitive},
		{fx.wt + "/.gitignore", notSensitive},
		{fx.wt + "/docs/environment.md", notSensitive},
		{fx.home + "/notes.txt", notSensitive},
	}
	for _, tc := range cases {
		real, err := realPath(tc.shown)
		if err != nil {
			t.Fatal(err)
		}
		if got, why := g.classifyPath(tc.shown, real); got != tc.want {
			t.Errorf("classifyPath(%q) = %d (%s), want %d", tc.shown, got, why, tc.want)
		}
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
