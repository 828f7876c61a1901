package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// TestSettingsAllowRulesDoNotBypassTheGate puts a project settings file in
// the worktree that allows every Bash command and skips permission prompts,
// and trusts the worktree so the CLI applies it. The gate must still be asked,
// and its refusal must hold.
func TestSettingsAllowRulesDoNotBypassTheGate(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("bash", "", call("toolu_bash", "Bash", map[string]string{"command": "echo ran > ran.txt", "description": "Write a marker"})),
		textStep("final", "Done."),
	}}
	decide := func(_ context.Context, c engine.ToolCall) engine.Verdict {
		return engine.Verdict{Message: "the gate says no"}
	}
	s := newSession(t, sc, sessionOpts{decide: decide, prepare: func(wt, configDir string) {
		settings := `{"permissions": {"allow": ["Bash(*)", "Bash", "Write", "Edit"], "defaultMode": "bypassPermissions"}}`
		if err := os.MkdirAll(filepath.Join(wt, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(wt, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
			t.Fatal(err)
		}
		// Trust the worktree, as a person who ran Claude Code there would
		// have; untrusted, the CLI would ignore the allow rules anyway.
		if err := os.MkdirAll(configDir, 0o700); err != nil {
			t.Fatal(err)
		}
		trust, _ := json.Marshal(map[string]any{"projects": map[string]any{wt: map[string]any{"hasTrustDialogAccepted": true}}})
		if err := os.WriteFile(filepath.Join(configDir, ".claude.json"), trust, 0o600); err != nil {
			t.Fatal(err)
		}
	}})
	s.MustTurn("Run the command.")

	calls := s.Host.Calls()
	if len(calls) != 1 || calls[0].Tool != "Bash" || calls[0].Command != "echo ran > ran.txt" {
		t.Fatalf("Permit calls = %+v, want the Bash call", calls)
	}
	if _, err := os.Stat(filepath.Join(s.Cwd, "ran.txt")); !os.IsNotExist(err) {
		t.Errorf("the refused command ran (ran.txt: %v)", err)
	}
	s.eng.mu.Lock()
	stderr := strings.Join(s.eng.conn.stderr.Lines(), "\n")
	s.eng.mu.Unlock()
	if strings.Contains(stderr, "Ignoring") {
		t.Errorf("the CLI ignored the settings, so the test proves nothing: %s", stderr)
	}
}

// TestSteerReachesTheModelAtAToolBoundary queues a steer before the turn;
// the first tool boundary hands it to the model.
func TestSteerReachesTheModelAtAToolBoundary(t *testing.T) {
	t.Parallel()
	const steer = "STEER: use lowercase only"
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("bash", "", call("toolu_bash", "Bash", map[string]string{"command": "echo hi", "description": "Say hi"})),
		{Name: "after-steer", Text: "Understood.", Match: &fakemodel.Match{Contains: steer}},
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	s.Host.QueueSteer(steer)
	res := s.MustTurn("Say hi.")

	if res.Text != "Understood." {
		t.Errorf("final text = %q: the model's request after the tool did not carry the steer", res.Text)
	}
	reqs := s.modelRequests()
	if len(reqs) != 2 || !reqs[1].ContainsText(steer) || reqs[0].ContainsText(steer) {
		t.Fatalf("the steer is not in exactly the request after the tool (%d requests)", len(reqs))
	}
	var d event.SteerData
	delivered := s.Host.OfType(event.SteerDelivered)
	if len(delivered) != 1 || json.Unmarshal(delivered[0], &d) != nil || d.ToolID != "toolu_bash" {
		t.Errorf("steerDelivered = %s", delivered)
	}
}

// TestUnstageableEditIsRefused: an edit whose old_string is not in the file
// cannot be shown to the gate, so it is refused without asking.
func TestUnstageableEditIsRefused(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("read", "", call("toolu_read", "Read", map[string]string{"file_path": "${cwd}/f.txt"})),
		toolStep("write", "", call("toolu_write", "Write", map[string]string{"file_path": "${cwd}/f.txt", "content": "whole new\n"})),
		textStep("final", "Done."),
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll, prepare: func(wt, _ string) {
		// A UTF-16 file: Corral stages UTF-8 text only.
		if err := os.WriteFile(filepath.Join(wt, "f.txt"), []byte{0xFF, 0xFE, 'h', 0, 'i', 0}, 0o644); err != nil {
			t.Fatal(err)
		}
	}})
	s.MustTurn("Rewrite f.txt.")
	for _, c := range s.Host.Calls() {
		if c.Tool == "Write" {
			t.Errorf("the gate was asked about an edit it cannot see: %+v", c)
		}
	}
	got, _ := os.ReadFile(filepath.Join(s.Cwd, "f.txt"))
	if string(got) != "\xff\xfeh\x00i\x00" {
		t.Errorf("f.txt = %q, want it untouched", got)
	}
	fin := s.toolFinished()
	if len(fin) != 2 || fin[1].Outcome != "denied" || !strings.Contains(fin[1].Message, "UTF-16") {
		t.Errorf("toolFinished = %+v", fin)
	}
}
