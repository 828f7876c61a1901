package claude

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/fakemodel"
)

// TestShellSeesNoKey is finding 2 of issue 18 against the real CLI: a Bash
// call that prints the API key's variable, the CLI's whole environment and
// what it can find of its parent's, reveals nothing of the key, neither in
// the tool's output nor in what goes back to the model; the model calls
// themselves still carry it.
func TestShellSeesNoKey(t *testing.T) {
	t.Parallel()
	const probe = `echo "A=$ANTHROPIC_API_KEY"; env; cat /proc/$PPID/environ | tr '\0' '\n'; ` +
		`for p in /proc/[0-9]*; do cat $p/environ 2>/dev/null | tr '\0' '\n'; done | grep -c sk-ant || true`
	sc := fakemodel.Scenario{
		Name: "shell-probe",
		Steps: []fakemodel.Step{
			toolStep("bash", "", call("toolu_bash", "Bash", map[string]string{"command": probe, "description": "Look for the key"})),
			textStep("final", "Done."),
		},
	}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	s.MustTurn("Find the key.")

	fin := s.toolFinished()
	if len(fin) != 1 || fin[0].Outcome != "ok" || !strings.Contains(fin[0].Output, "A=") {
		t.Fatalf("the probe did not run: %+v", fin)
	}
	if strings.Contains(fin[0].Output, testKey) {
		t.Fatalf("the shell saw the key:\n%s", fin[0].Output)
	}
	reqs := s.Fake.Requests()
	if len(reqs) < 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	for _, r := range reqs {
		if strings.Contains(string(r.Body), testKey) {
			t.Fatalf("request %d to the model carries the key in its body", r.Seq)
		}
		// The fake server accepted the key (it answers 401 otherwise).
		if r.Step == "auth" {
			t.Fatalf("request %d was refused: the CLI did not send the key", r.Seq)
		}
	}
	raw, _ := json.Marshal(reqs)
	if strings.Contains(string(raw), testKey) {
		t.Fatal("the key is somewhere in the model's requests")
	}
}
