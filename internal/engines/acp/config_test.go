package acp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/pkg/engine"
)

func TestParseCommand(t *testing.T) {
	tests := []struct {
		raw     string
		want    []string
		wantErr bool
	}{
		{raw: `["node", "agent.js", "--acp"]`, want: []string{"node", "agent.js", "--acp"}},
		{raw: "gemini --experimental-acp", want: []string{"gemini", "--experimental-acp"}},
		{raw: `["with space/agent", "a b"]`, want: []string{"with space/agent", "a b"}},
		{raw: `[]`, wantErr: true},
		{raw: `[""]`, wantErr: true},
		{raw: `["node", 3]`, wantErr: true},
		{raw: `[not json`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseCommand(tt.raw)
		if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
			t.Errorf("parseCommand(%q) = %q, %v", tt.raw, got, err)
		}
	}
}

func TestSettingsHandTheAgentOnlyWhatItIsConfiguredFor(t *testing.T) {
	opts := engine.StartOptions{
		Dir:           "/state/s1",
		Model:         "big-model",
		ModelEndpoint: "http://127.0.0.1:9",
		Credentials:   map[string]string{"openai-api-key": "sk-o", "anthropic-api-key": "sk-a"},
		Env:           []string{"PATH=/bin", "HOME=/home/me"},
		Config: map[string]string{
			ConfigCommand:       `["my-agent", "--acp"]`,
			ConfigCredentialEnv: "OPENAI_API_KEY=openai-api-key, MISSING=github-token",
			ConfigEndpointEnv:   "OPENAI_BASE_URL",
		},
	}
	s, err := newSettings(opts)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"PATH=/bin", "HOME=/home/me", "OPENAI_API_KEY=sk-o", "OPENAI_BASE_URL=http://127.0.0.1:9"}
	if !slices.Equal(s.argv, []string{"my-agent", "--acp"}) || !slices.Equal(s.env, want) || s.deferred != nil {
		t.Fatalf("settings %+v, want env %q", s, want)
	}
	for _, bad := range []string{"OPENAI_API_KEY", "=item", "A B=item"} {
		opts.Config[ConfigCredentialEnv] = bad
		if _, err := newSettings(opts); err == nil {
			t.Errorf("credentialEnv %q accepted", bad)
		}
	}
}

func TestTheClaudeCodePreset(t *testing.T) {
	engines := t.TempDir()
	bin := filepath.Join(engines, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"claude-code-acp", "claude"} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s, err := newSettings(engine.StartOptions{
		Dir:           "/state/s1",
		ModelEndpoint: "http://127.0.0.1:9",
		Credentials:   map[string]string{"anthropic-api-key": "sk-a"},
		Env:           []string{"PATH=/bin", "IS_SANDBOX=yes", "NODE_OPTIONS=--require evil.js", "DEBUG=*"},
		Config:        map[string]string{locate.KeyEnginesDir: engines},
	})
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Join(s.env, "\n")
	for _, want := range []string{
		"CLAUDE_CODE_EXECUTABLE=" + filepath.Join(bin, "claude"),
		"CLAUDE_CONFIG_DIR=/state/s1/engine/acp/claude",
		"HOME=/state/s1/engine/acp/home",
		"ANTHROPIC_API_KEY=sk-a",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %s:\n%s", want, env)
		}
	}
	for _, gone := range []string{"IS_SANDBOX", "NODE_OPTIONS", "DEBUG", "ANTHROPIC_MODEL"} {
		if strings.Contains(env, gone+"=") {
			t.Errorf("env has %s:\n%s", gone, env)
		}
	}
	if s.argv[0] != "node" || s.argv[1] != filepath.Join(bin, "claude-code-acp") || !s.deferred["mcp__acp__Bash"] {
		t.Errorf("settings %+v", s)
	}
	if _, err := newSettings(engine.StartOptions{Dir: "/s", Config: map[string]string{ConfigAgent: "gemini"}}); err == nil || !strings.Contains(err.Error(), "unknown agent preset") {
		t.Errorf("unknown preset: %v", err)
	}
}
