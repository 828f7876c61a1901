package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestEditRequests(t *testing.T) {
	fx := newFixture(t)
	for _, mode := range []Mode{ModeReview, ModeAuto} {
		t.Run(string(mode), func(t *testing.T) {
			p := testPolicy()
			p.Mode = mode
			runJudgeCases(t, fx, fx.gate(t, p), KindEdit, []judgeCase{
				{name: "existing file", req: "src/main.go", want: Allow, cat: CategoryEdit},
				{name: "new nested file", req: "new/dir/file.txt", want: Allow},
				{name: "absolute inside", req: "{{wt}}/src/main.go", want: Allow},
				{name: "parent", req: "../x", want: Ask, reason: "outside the worktree"},
				{name: "absolute outside", req: "{{out}}/secret.txt", want: Ask},
				{name: "through symlink to outside", req: "out/new.txt", want: Ask},
				{name: "symlinked file to outside", req: "secret", want: Ask},
				{name: "git config", req: ".git/config", want: Ask, reason: ".git"},
				{name: "env", req: ".env", want: Ask},
				{name: "corral settings", req: ".corral/settings.json", want: Ask},
				{name: "ssh config", req: "{{home}}/.ssh/config", want: Ask},
				{name: "tilde", req: "~/.bashrc", want: Ask},
				{name: "empty", req: "", want: Ask},
				{name: "worktree root", req: ".", want: Ask},
				{name: "dotdot back inside", req: "src/../go.mod", want: Allow},
				{name: "symlink then dotdot", req: "inner/../go.mod", want: Allow},
			})
		})
	}
	t.Run("readonly", func(t *testing.T) {
		p := testPolicy()
		p.Mode = ModeReadonly
		runJudgeCases(t, fx, fx.gate(t, p), KindEdit, []judgeCase{
			{name: "inside", req: "src/main.go", want: Deny, reason: "readonly"},
			{name: "outside", req: "../x", want: Deny},
			{name: "sensitive", req: ".git/config", want: Deny},
		})
	})
}

func TestReadRequests(t *testing.T) {
	fx := newFixture(t)
	p := testPolicy()
	p.ReadRoots = []string{fx.outside, "~/.aws"}
	runJudgeCases(t, fx, fx.gate(t, p), KindRead, []judgeCase{
		{name: "inside", req: "src/main.go", want: Allow, cat: CategoryRead},
		{name: "read root", req: "{{out}}/secret.txt", want: Allow},
		{name: "symlink into read root", req: "secret", want: Allow},
		{name: "outside", req: "../other", want: Ask, cat: CategoryRead},
		{name: "env inside", req: ".env", want: Ask, reason: "environment file"},
		{name: "credential inside a read root", req: "~/.aws/credentials", want: Ask},
		{name: "ssh key", req: "{{home}}/.ssh/id_rsa", want: Ask},
		{name: "git internals are readable", req: ".git/config", want: Allow},
		{name: "dev null", req: "/dev/null", want: Allow},
		{name: "empty", req: "", want: Ask},
	})
}

func TestFetchRequests(t *testing.T) {
	fx := newFixture(t)
	p := testPolicy()
	p.WebHosts = []string{"pkg.go.dev", "*.example.com"}
	runJudgeCases(t, fx, fx.gate(t, p), KindFetch, []judgeCase{
		{name: "listed host", req: "https://pkg.go.dev/fmt", want: Allow, cat: CategoryWeb},
		{name: "host case and trailing dot", req: "https://PKG.go.dev./fmt", want: Allow},
		{name: "subdomain wildcard", req: "https://api.example.com/v1", want: Allow},
		{name: "wildcard excludes the apex", req: "https://example.com/", want: Ask},
		{name: "suffix is not a subdomain", req: "https://evilexample.com/", want: Ask},
		{name: "unlisted host", req: "https://evil.test/x", want: Ask, cat: CategoryWeb},
		{name: "other scheme", req: "file:///etc/passwd", want: Ask},
		{name: "credentials in URL", req: "https://user:pw@pkg.go.dev/", want: Ask},
		{name: "unparsable", req: "http://[::1", want: Ask},
		{name: "no host", req: "https:///path", want: Ask},
	})
	open := testPolicy()
	open.AllowNetwork = true
	runJudgeCases(t, fx, fx.gate(t, open), KindFetch, []judgeCase{
		{name: "any host with network allowed", req: "https://evil.test/x", want: Allow},
	})
}

func TestMCPRequests(t *testing.T) {
	fx := newFixture(t)
	p := testPolicy()
	p.MCPTools = []string{"github/get_*", "docs/*"}
	runJudgeCases(t, fx, fx.gate(t, p), KindMCP, []judgeCase{
		{name: "matching tool", req: "github/get_issue", want: Allow, cat: CategoryMCP},
		{name: "any tool of a server", req: "docs/search", want: Allow},
		{name: "other tool", req: "github/create_issue", want: Ask, cat: CategoryMCP},
		{name: "other server", req: "slack/get_user", want: Ask},
		{name: "no tool", req: "github/", want: Ask},
	})
}

func TestUnknownRequestKindIsAsked(t *testing.T) {
	fx := newFixture(t)
	j := fx.gate(t, testPolicy()).Judge(Request{Kind: "teleport"})
	if j.Decision != Ask {
		t.Fatalf("unknown kind judged %s, want ask", j.Decision)
	}
}

func TestWorktreeReachedThroughSymlink(t *testing.T) {
	real := t.TempDir()
	if err := os.MkdirAll(filepath.Join(real, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	linkParent := t.TempDir()
	link := filepath.Join(linkParent, "wt")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	// Like /tmp and /private/tmp on macOS: the session knows the
	// worktree by a path through a symlink.
	g, err := New(testPolicy(), link, WithHomeDir(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if g.Worktree() != real {
		t.Errorf("Worktree() = %q, want the real path %q", g.Worktree(), real)
	}
	cases := []struct {
		req  Request
		want Decision
	}{
		{Request{Kind: KindEdit, Path: filepath.Join(link, "src", "a.go")}, Allow},
		{Request{Kind: KindEdit, Path: filepath.Join(real, "src", "a.go")}, Allow},
		{Request{Kind: KindEdit, Path: "src/a.go"}, Allow},
		{Request{Kind: KindEdit, Path: filepath.Join(link, "..", "x")}, Ask},
		{Request{Kind: KindShell, Command: "echo x > " + filepath.Join(link, "src", "a.go")}, Allow},
		{Request{Kind: KindShell, Command: "cat " + filepath.Join(link, "src", "a.go")}, Allow},
		{Request{Kind: KindShell, Command: "cd " + link + " && ls"}, Allow},
		{Request{Kind: KindShell, Command: "echo x > " + filepath.Join(linkParent, "x")}, Ask},
	}
	for _, tc := range cases {
		if got := g.Judge(tc.req); got.Decision != tc.want {
			t.Errorf("Judge(%+v) = %s (%s), want %s", tc.req, got.Decision, got.Reason, tc.want)
		}
	}
}

func TestNewRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		p        Policy
		worktree string
	}{
		{"missing worktree", DefaultPolicy(), filepath.Join(dir, "missing")},
		{"worktree is a file", DefaultPolicy(), file},
		{"bad mode", Policy{Mode: "yolo"}, dir},
		{"bad pattern", Policy{Allow: []string{"a||b"}}, dir},
		{"wrapper pattern", Policy{Allow: []string{"sudo *"}}, dir},
		{"relative read root", Policy{ReadRoots: []string{"rel"}}, dir},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.p, tc.worktree, WithHomeDir(dir)); err == nil {
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}

func TestWithModeChangesOnlyTheNewGate(t *testing.T) {
	fx := newFixture(t)
	review := fx.gate(t, testPolicy())
	readonly, err := review.WithMode(ModeReadonly)
	if err != nil {
		t.Fatal(err)
	}
	edit := Request{Kind: KindShell, Command: "echo x > out.txt"}
	if got := readonly.Judge(edit).Decision; got != Deny {
		t.Errorf("readonly gate: %s, want deny", got)
	}
	if got := review.Judge(edit).Decision; got != Allow {
		t.Errorf("original gate: %s, want allow", got)
	}
	if readonly.Policy().Mode != ModeReadonly {
		t.Errorf("Policy().Mode = %q", readonly.Policy().Mode)
	}
	if _, err := review.WithMode("yolo"); err == nil {
		t.Error("WithMode accepted an unknown mode")
	}
}

func TestUnattendedAskBecomesUnavailable(t *testing.T) {
	fx := newFixture(t)
	p := testPolicy()
	p.Unattended = true
	g := fx.gate(t, p)
	cases := []struct {
		cmd  string
		want Action
	}{
		{"git status", ActionRun},
		{"curl https://x", ActionUnavailable},
		{"make deploy now", ActionRefuse},
	}
	for _, tc := range cases {
		j := g.Judge(Request{Kind: KindShell, Command: tc.cmd})
		if !j.Unattended {
			t.Errorf("Judge(%q).Unattended = false in an unattended session", tc.cmd)
		}
		if got := j.Action(); got != tc.want {
			t.Errorf("Judge(%q).Action() = %s, want %s", tc.cmd, got, tc.want)
		}
	}
	attended := fx.gate(t, testPolicy()).Judge(Request{Kind: KindShell, Command: "curl https://x"})
	if attended.Unattended || attended.Action() != ActionAsk {
		t.Errorf("attended ask: Unattended=%v Action=%s, want false and ask", attended.Unattended, attended.Action())
	}
}

func TestJudgementJSON(t *testing.T) {
	fx := newFixture(t)
	j := fx.gate(t, testPolicy()).Judge(Request{Kind: KindShell, Command: "ls; curl https://x"})
	data, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"decision", "category", "reason", "parts"} {
		if _, ok := got[key]; !ok {
			t.Errorf("JSON %s lacks %q", data, key)
		}
	}
	parts, _ := got["parts"].([]any)
	if len(parts) != 2 {
		t.Fatalf("JSON parts = %v, want 2", got["parts"])
	}
	first, _ := parts[0].(map[string]any)
	if first["command"] != "ls" || first["decision"] != "allow" {
		t.Errorf("first part = %v, want ls allowed", first)
	}
}

func TestJudgeIsDeterministicAndSafeForConcurrentUse(t *testing.T) {
	fx := newFixture(t)
	g := fx.gate(t, testPolicy())
	cmds := []string{benchCommand, "rm -rf /", "cd src && cat ../go.mod", "bash -c 'curl x'", "echo $(id) > out/x"}
	want := make([]Judgement, len(cmds))
	for i, c := range cmds {
		want[i] = g.Judge(Request{Kind: KindShell, Command: c})
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8*len(cmds))
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i, c := range cmds {
				got := g.Judge(Request{Kind: KindShell, Command: c})
				if !judgementsEqual(got, want[i]) {
					errs <- c
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for c := range errs {
		t.Errorf("concurrent Judge(%q) differed from the first judgement", c)
	}
}

func judgementsEqual(a, b Judgement) bool {
	if a.Decision != b.Decision || a.Category != b.Category || a.Reason != b.Reason || a.Unattended != b.Unattended || len(a.Parts) != len(b.Parts) {
		return false
	}
	for i := range a.Parts {
		if a.Parts[i] != b.Parts[i] {
			return false
		}
	}
	return true
}

func TestReasonsAreSentences(t *testing.T) {
	fx := newFixture(t)
	g := fx.gate(t, testPolicy())
	for _, c := range []string{"ls", "rm -rf /", "curl x; ls", "$X", "ls ("} {
		j := g.Judge(Request{Kind: KindShell, Command: c})
		if !strings.HasSuffix(j.Reason, ".") {
			t.Errorf("Judge(%q).Reason = %q, want a sentence ending in a full stop", c, j.Reason)
		}
		for _, p := range j.Parts {
			if !strings.HasSuffix(p.Reason, ".") {
				t.Errorf("part %q reason = %q, want a sentence", p.Command, p.Reason)
			}
		}
	}
}
