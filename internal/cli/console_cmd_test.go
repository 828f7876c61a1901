package cli

import (
	"strings"
	"testing"
)

func TestConsoleAndWorkspaceUsageMistakesExit2(t *testing.T) {
	t.Setenv("CORRAL_STATE", t.TempDir())
	for _, args := range [][]string{
		{"console", "a", "b"},
		{"workspace"},
		{"workspace", "id", "frobnicate"},
		{"workspace", "id", "commit"},
		{"workspace", "id", "commit", " "},
		{"workspace", "id", "merge", "now"},
		{"workspace", "id", "diff", "extra"},
	} {
		if code, _, errOut := run(args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q", args, code, errOut)
		}
	}
}

func TestConsoleRefusesBeforeListening(t *testing.T) {
	t.Run("no supervisor", func(t *testing.T) {
		t.Setenv("CORRAL_STATE", t.TempDir())
		code, out, errOut := run("console", "--open=false")
		if code != 1 || out != "" || !strings.Contains(errOut, "no supervisor answers") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
		}
	})
	startDaemon(t)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"an unknown session", []string{"console", "--open=false", "0123456789ab"}, "not found"},
		{"an address off the loopback", []string{"console", "--open=false", "--listen", "0.0.0.0:0"}, "loopback address only"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(c.args...)
			if code != 1 || out != "" || !strings.Contains(errOut, c.want) {
				t.Fatalf("exit %d, stdout %q, stderr %q", code, out, errOut)
			}
		})
	}
}
