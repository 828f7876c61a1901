package gatecli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type result struct {
	Decision   string `json:"decision"`
	Category   string `json:"category"`
	Reason     string `json:"reason"`
	Action     string `json:"action"`
	Unattended bool   `json:"unattended"`
	Parts      []struct {
		Command  string `json:"command"`
		Decision string `json:"decision"`
		Category string `json:"category"`
		Reason   string `json:"reason"`
	} `json:"parts"`
}

func worktree(t *testing.T) string {
	t.Helper()
	wt := t.TempDir()
	if err := os.MkdirAll(filepath.Join(wt, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	return wt
}

func run(t *testing.T, args ...string) (int, result, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(args, &stdout, &stderr)
	var r result
	if code != ExitUsage {
		out := stdout.String()
		if strings.Count(out, "\n") != 1 {
			t.Fatalf("stdout is not one line of JSON: %q", out)
		}
		dec := json.NewDecoder(strings.NewReader(out))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("stdout %q: %v", out, err)
		}
	}
	return code, r, stderr.String()
}

func TestCheckDecisionsAndExitCodes(t *testing.T) {
	wt := worktree(t)
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`{"allow": ["make test"], "webHosts": ["pkg.go.dev"], "mcpTools": ["docs/*"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		args     []string
		code     int
		decision string
		category string
		action   string
	}{
		{"allowed command", []string{"--", "git status"}, ExitAllow, "allow", "shell", "run"},
		{"command without double dash", []string{"ls -la"}, ExitAllow, "allow", "shell", "run"},
		{"network command", []string{"--", "curl https://example.com"}, ExitAsk, "ask", "network", "ask"},
		{"compound", []string{"--", "ls && rm -rf /"}, ExitAsk, "ask", "edit", "ask"},
		{"readonly write", []string{"--mode", "readonly", "--", "echo hi > out.txt"}, ExitDeny, "deny", "edit", "refuse"},
		{"policy file pattern", []string{"--policy", policy, "--", "make test"}, ExitAllow, "allow", "shell", "run"},
		{"unattended ask", []string{"--unattended", "--", "curl https://x"}, ExitAsk, "ask", "network", "permissionUnavailable"},
		{"edit inside", []string{"--edit", "src/a.go"}, ExitAllow, "allow", "edit", "run"},
		{"edit outside", []string{"--edit", "../a.go"}, ExitAsk, "ask", "edit", "ask"},
		{"edit readonly", []string{"--mode", "readonly", "--edit", "src/a.go"}, ExitDeny, "deny", "edit", "refuse"},
		{"edit git internals", []string{"--edit", ".git/config"}, ExitAsk, "ask", "edit", "ask"},
		{"read inside", []string{"--read", "src/a.go"}, ExitAllow, "allow", "read", "run"},
		{"read outside", []string{"--read", "/etc/hostname"}, ExitAsk, "ask", "read", "ask"},
		{"fetch listed host", []string{"--policy", policy, "--fetch", "https://pkg.go.dev/fmt"}, ExitAllow, "allow", "web", "run"},
		{"fetch other host", []string{"--fetch", "https://example.com"}, ExitAsk, "ask", "web", "ask"},
		{"mcp allowed", []string{"--policy", policy, "--mcp", "docs/search"}, ExitAllow, "allow", "mcp", "run"},
		{"mcp asked", []string{"--mcp", "github/create_issue"}, ExitAsk, "ask", "mcp", "ask"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"check", "--worktree", wt}, tc.args...)
			code, r, stderr := run(t, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d (stderr %q, reason %q)", code, tc.code, stderr, r.Reason)
			}
			if r.Decision != tc.decision || r.Category != tc.category || r.Action != tc.action {
				t.Errorf("got %s/%s/%s, want %s/%s/%s (%s)", r.Decision, r.Category, r.Action, tc.decision, tc.category, tc.action, r.Reason)
			}
			if r.Reason == "" {
				t.Error("no reason")
			}
		})
	}
}

func TestCheckPrintsParts(t *testing.T) {
	_, r, _ := run(t, "check", "--worktree", worktree(t), "--", "ls > out.txt; curl https://x | head")
	want := []string{"ls > out.txt", "curl https://x", "head"}
	if len(r.Parts) != len(want) {
		t.Fatalf("parts = %+v, want %v", r.Parts, want)
	}
	for i, w := range want {
		if r.Parts[i].Command != w {
			t.Errorf("part %d = %q, want %q", i, r.Parts[i].Command, w)
		}
	}
}

func TestCheckBadUsage(t *testing.T) {
	wt := worktree(t)
	badPolicy := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(badPolicy, []byte(`{"allow": ["sudo *"]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	hostile := worktree(t)
	if err := os.MkdirAll(filepath.Join(hostile, ".corral"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(hostile, ".corral", "settings.json"), []byte(`{"gate": {"allowNetwork": true}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
	}{
		{"no arguments", nil},
		{"unknown subcommand", []string{"judge", "ls"}},
		{"nothing to judge", []string{"check", "--worktree", wt}},
		{"two requests", []string{"check", "--worktree", wt, "--edit", "a", "--", "ls"}},
		{"unknown flag", []string{"check", "--frob", "--", "ls"}},
		{"bad mode", []string{"check", "--worktree", wt, "--mode", "yolo", "--", "ls"}},
		{"missing worktree", []string{"check", "--worktree", filepath.Join(wt, "missing"), "--", "ls"}},
		{"missing policy file", []string{"check", "--worktree", wt, "--policy", filepath.Join(wt, "none.json"), "--", "ls"}},
		{"invalid policy", []string{"check", "--worktree", wt, "--policy", badPolicy, "--", "ls"}},
		{"widening project settings", []string{"check", "--worktree", hostile, "--", "ls"}},
		{"bad mcp name", []string{"check", "--worktree", wt, "--mcp", "noslash"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := Main(tc.args, &stdout, &stderr); code != ExitUsage {
				t.Fatalf("exit %d, want %d (stdout %q)", code, ExitUsage, stdout.String())
			}
			if stdout.Len() != 0 {
				t.Errorf("printed %q on bad usage", stdout.String())
			}
			if stderr.Len() == 0 {
				t.Error("no message on stderr")
			}
		})
	}
}
