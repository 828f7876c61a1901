package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/supervisor/fakerunner"
)

func TestNewWithEngineConfig(t *testing.T) {
	state := startDaemon(t, fakerunner.ModeOn)
	id := strings.TrimSpace(mustRun(t, "new", "--engine", "codex", "--engine-config", "auth=login", "--engine-config", "requestMaxRetries=4", "--cwd", t.TempDir()))
	raw, err := os.ReadFile(filepath.Join(state, "sessions", id, "meta.json"))
	if err != nil || !strings.Contains(string(raw), `"auth": "login"`) || !strings.Contains(string(raw), `"requestMaxRetries": 4`) {
		t.Fatalf("meta.json %s %v", raw, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--engine", "codex", "--engine-config", "retries=1"}, "codex.retries: the codex engine has no such setting"},
		{[]string{"--engine", "codex", "--engine-config", "requestMaxRetries=many"}, `want an integer of at least 0, not "many"`},
		{[]string{"--engine", "codex", "--engine-config", "auth"}, "want KEY=VALUE"},
	} {
		code, _, errOut := run(append([]string{"new"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("new %v: exit %d %q, want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestServeEngineConfigFlag(t *testing.T) {
	d := engineDefaults{}
	for _, v := range []string{"codex.requestMaxRetries=4", "copilot.offline=false", "codex.auth=login", "my-plugin.mode=fast"} {
		if err := d.Set(v); err != nil {
			t.Fatalf("Set(%q): %v", v, err)
		}
	}
	if got := d.String(); got != "codex.auth=login,codex.requestMaxRetries=4,copilot.offline=false,my-plugin.mode=fast" {
		t.Fatalf("String() = %q", got)
	}
	for _, v := range []string{"requestMaxRetries=4", "codex.=1", "codex.retries=1", "copilot.offline=maybe", "codex.requestMaxRetries"} {
		if err := d.Set(v); err == nil {
			t.Errorf("Set(%q) accepted", v)
		}
	}
	code, _, errOut := run("serve", "--engine-config", "codex.retries=1", "--state", t.TempDir())
	if code != 2 || !strings.Contains(errOut, "codex.retries: the codex engine has no such setting") {
		t.Fatalf("serve with a bad default: exit %d %q", code, errOut)
	}
}
