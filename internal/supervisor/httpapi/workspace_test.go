package httpapi

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/api"
)

// gitRepo makes a repository with one commit on main.
func gitRepo(t *testing.T) string {
	t.Helper()
	testenv.NeedGit(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "start"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

func TestWorkspaceRoutes(t *testing.T) {
	f := newScriptFixture(t, "")
	repo := gitRepo(t)
	status, body := f.do("POST", "/v1/sessions", `{"engine":"script","cwd":"`+repo+`","workspace":{"base":"main"}}`)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	var created api.SessionReply
	json.Unmarshal(body, &created)
	s := created.Session
	ws := s.Spec.Workspace
	if ws == nil || ws.Path == "" || s.Spec.Cwd != ws.Path || !strings.HasPrefix(ws.Branch, "corral/") {
		t.Fatalf("spec after create: %+v", s.Spec)
	}
	if err := os.WriteFile(filepath.Join(ws.Path, "new.txt"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"diff", "GET", "/v1/sessions/" + s.ID + "/workspace", "", 200, `"path":"new.txt","kind":"create"`},
		{"commit needs a message", "POST", "/v1/sessions/" + s.ID + "/workspace/commit", `{"message":""}`, 400, `"code":"bad_request"`},
		{"commit refuses unknown fields", "POST", "/v1/sessions/" + s.ID + "/workspace/commit", `{"msg":"x"}`, 400, `unknown field`},
		{"commit", "POST", "/v1/sessions/" + s.ID + "/workspace/commit", `{"message":"add new.txt"}`, 200, `"commit":"`},
		{"nothing left to commit", "POST", "/v1/sessions/" + s.ID + "/workspace/commit", `{"message":"again"}`, 409, `nothing to commit`},
		{"merge", "POST", "/v1/sessions/" + s.ID + "/workspace/merge", `{}`, 200, `"merged":true`},
		{"unknown session", "GET", "/v1/sessions/0123456789ab/workspace", "", 404, `"code":"not_found"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := f.do(c.method, c.path, c.body)
			if status != c.status || !strings.Contains(string(body), c.want) {
				t.Fatalf("%d %s; want %d and %s", status, body, c.status, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(repo, "new.txt")); err != nil {
		t.Errorf("the merge did not reach the repository's checkout: %v", err)
	}
	if status, body := f.do("DELETE", "/v1/sessions/"+s.ID, ""); status != 200 {
		t.Fatalf("delete: %d %s", status, body)
	}
	if _, err := os.Stat(ws.Path); !os.IsNotExist(err) {
		t.Errorf("the worktree outlived its session: %v", err)
	}
}

func TestWorkspaceRefusals(t *testing.T) {
	f := newScriptFixture(t, "")
	repo := gitRepo(t)
	plain := t.TempDir()
	cases := []struct {
		name, body string
		status     int
		want       string
	}{
		{"not a repository", `{"engine":"script","cwd":"` + plain + `","workspace":{}}`, 400, "not in a git repository"},
		{"no such base", `{"engine":"script","cwd":"` + repo + `","workspace":{"base":"nope"}}`, 400, "not a branch or commit"},
		{"fields the supervisor sets", `{"engine":"script","cwd":"` + repo + `","workspace":{"path":"/tmp/x"}}`, 400, "set by the supervisor"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, body := f.do("POST", "/v1/sessions", c.body)
			if status != c.status || !strings.Contains(string(body), c.want) {
				t.Fatalf("%d %s; want %d and %s", status, body, c.status, c.want)
			}
		})
	}
	status, body := f.do("POST", "/v1/sessions", `{"engine":"script","cwd":"`+plain+`"}`)
	if status != 201 {
		t.Fatalf("create: %d %s", status, body)
	}
	var created api.SessionReply
	json.Unmarshal(body, &created)
	if status, body := f.do("GET", "/v1/sessions/"+created.Session.ID+"/workspace", ""); status != 404 || !strings.Contains(string(body), "has no workspace") {
		t.Fatalf("session without a workspace: %d %s", status, body)
	}
}
