package supervisor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRealRunPrintMode runs `supervisor run -p` as a script or CI job would:
// the final answer alone on stdout and the exit status saying how it went.
func TestRealRunPrintMode(t *testing.T) {
	sup, runner := realBinaries(t)
	cases := []struct {
		name, scenario string
		code           int
		stdout, stderr string
	}{
		{"answer", "turns:\n  - steps:\n      - say: \"forty-two\"\n", 0, "forty-two\n", ""},
		{"failure", "turns:\n  - steps:\n      - fail: {code: signInExpired, message: key rejected}\n", 1, "", "signInExpired: key rejected"},
		{"ask without a human", "turns:\n  - steps:\n      - tool: shell\n        command: uptime\n", 1, "", "permissionUnavailable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sc := filepath.Join(t.TempDir(), "s.yaml")
			if err := os.WriteFile(sc, []byte(c.scenario), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(sup, "run", "-p", "go", "--engine", "script", "--scenario", sc, "--cwd", t.TempDir(), "--runner", runner)
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code || out.String() != c.stdout || !strings.Contains(errOut.String(), c.stderr) {
				t.Fatalf("exit %d stdout %q stderr %q; want %d %q %q", code, out.String(), errOut.String(), c.code, c.stdout, c.stderr)
			}
		})
	}
}
