package versions

import (
	"strings"
	"testing"
)

func TestVersionsInsideTheRangeAreSupportedAndOthersNamed(t *testing.T) {
	tests := []struct {
		name      string
		check     func(string) (string, error)
		out, want string
		ok        bool
		rng       string
	}{
		{"claude oldest", Claude, "2.1.328 (Claude Code)\n", "2.1.328", true, ClaudeRange},
		{"claude newest", Claude, "2.1.332 (Claude Code)", "2.1.332", true, ClaudeRange},
		{"claude later patch", Claude, "2.1.400 (Claude Code)", "2.1.400", true, ClaudeRange},
		{"claude too old", Claude, "2.1.327 (Claude Code)", "2.1.327", false, ClaudeRange},
		{"claude new minor", Claude, "2.2.0 (Claude Code)", "2.2.0", false, ClaudeRange},
		{"claude new major", Claude, "3.1.400 (Claude Code)", "3.1.400", false, ClaudeRange},
		{"claude not installed", Claude, "claude native binary not installed", "", false, ClaudeRange},
		{"claude empty", Claude, "", "", false, ClaudeRange},
		{"claude another program", Claude, "2.1.400 (Something)", "", false, ClaudeRange},
		{"codex oldest", Codex, "codex-cli 0.169.0\n", "0.169.0", true, CodexRange},
		{"codex patch", Codex, "codex-cli 0.169.3", "0.169.3", true, CodexRange},
		{"codex newest", Codex, "codex-cli 0.171.0", "0.171.0", true, CodexRange},
		{"codex newer", Codex, "codex-cli 0.172.0", "0.172.0", false, CodexRange},
		{"codex older", Codex, "codex-cli 0.163.0", "0.163.0", false, CodexRange},
		{"codex another program", Codex, "2.1.328 (Claude Code)", "", false, CodexRange},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.check(tt.out)
			if got != tt.want || (err == nil) != tt.ok {
				t.Fatalf("%q: %q, %v; want %q ok=%v", tt.out, got, err, tt.want, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), tt.rng) {
				t.Errorf("%q: error %q does not say what is supported", tt.out, err)
			}
		})
	}
}
