package codex

import (
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/event"
)

// TestShellSeesNoKey is finding 2 of issue 18 against the real CLI: a
// command that prints the key's variable and the whole environment reveals
// nothing of the key, neither in its output nor in what goes back to the
// model; the model calls still carry it. (Codex keeps the key in its own
// environment and leaves it out of its commands' (shell_environment_policy);
// reading another process's environment is an ask of the gate.)
func TestShellSeesNoKey(t *testing.T) {
	t.Parallel()
	probe := `echo "A=$` + apiKeyEnv + `"; echo "B=$OPENAI_API_KEY"; env`
	sc := script(
		fakemodel.Step{Name: "probe", Tools: tools(shellCall("call_probe", probe, true))},
		fakemodel.Step{Name: "final", Text: "Done."},
	)
	var q verdicts
	q.add(allow)
	r := newRig(t, sc, q.decide)
	r.start("")
	r.MustTurn("find the key")

	ran := false
	for _, f := range enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished) {
		ran = ran || strings.Contains(f.Output, "A=")
		if strings.Contains(f.Output, testKey) {
			t.Fatalf("the command saw the key:\n%s", f.Output)
		}
	}
	if !ran {
		t.Fatal("the probe did not run")
	}
	for _, req := range r.Fake.Requests() {
		if strings.Contains(string(req.Body), testKey) {
			t.Fatalf("request %d to the model carries the key in its body", req.Seq)
		}
		if req.Step == "auth" {
			t.Fatalf("request %d was refused: the CLI did not send the key", req.Seq)
		}
	}
}
