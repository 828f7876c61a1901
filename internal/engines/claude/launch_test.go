package claude

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestBuildEnvDropsInheritedCredentials(t *testing.T) {
	base := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8",
		"ANTHROPIC_API_KEY=inherited", "ANTHROPIC_BASE_URL=http://elsewhere", "CLAUDE_CONFIG_DIR=/home/u/.claude",
		"CLAUDE_CODE_OAUTH_TOKEN=t", "AWS_ACCESS_KEY_ID=a", "GH_TOKEN=g", "X_API_KEY=x", "NODE_OPTIONS=--inspect", "DEBUG=*",
	}
	env := buildEnv(base, "/s/engine/claude", "http://127.0.0.1:9")
	want := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LANG=C.UTF-8",
		"CLAUDE_CONFIG_DIR=/s/engine/claude",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1", "BUN_ENABLE_CRASH_REPORTING=0",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:9",
	}
	if !slices.Equal(env, want) {
		t.Errorf("env =\n%q\nwant\n%q", env, want)
	}
	if env := buildEnv(nil, "/c", ""); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, envBaseURL+"=") }) {
		t.Errorf("a base URL was set without an endpoint: %q", env)
	}
}

func TestSessionArgs(t *testing.T) {
	for _, tc := range []struct {
		resume bool
		from   string
		want   string
	}{
		{false, "", "--session-id N"},
		{true, "", "--resume N"},
		{false, "O", "--resume O --fork-session --session-id N"},
	} {
		if got := strings.Join(sessionArgs("N", tc.resume, tc.from), " "); got != tc.want {
			t.Errorf("sessionArgs(resume=%v, from=%q) = %q, want %q", tc.resume, tc.from, got, tc.want)
		}
	}
}

func TestNewConversationIDIsAUUIDv4(t *testing.T) {
	pattern := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	a, err := newConversationID()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := newConversationID()
	if !pattern.MatchString(a) || a == b {
		t.Errorf("ids %q, %q", a, b)
	}
}
