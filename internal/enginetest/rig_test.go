package enginetest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// The rig drives the script engine (no CLI): a turn's text, a tool call
// through Permit, and what the engine emitted, all as the engines' tests
// see them.
func TestRigRunsATurnAndRecordsWhatTheEngineDid(t *testing.T) {
	scenario := filepath.Join(t.TempDir(), "sc.yaml")
	if err := os.WriteFile(scenario, []byte(`turns:
  - steps:
      - say: "Writing it."
      - tool: write
        path: hello.txt
        content: "hi\n"
      - say: "Done."
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var asked []engine.ToolCall
	r := enginetest.NewRig(t, enginetest.RigConfig{
		New:      script.New,
		Scenario: fakemodel.Scenario{},
		Decide: func(_ context.Context, call engine.ToolCall) engine.Verdict {
			asked = append(asked, call)
			return engine.Verdict{Allow: true}
		},
	})
	r.Opts.Scenario = scenario
	r.Start("")
	res := r.MustTurn("go")
	if res.Text == "" || res.Stopped {
		t.Fatalf("result %+v", res)
	}
	if len(asked) != 1 || asked[0].Kind != engine.KindEdit || asked[0].Edit == nil || asked[0].Edit.Path != r.FileIn("hello.txt") {
		t.Fatalf("Permit calls %+v", asked)
	}
	if b, err := os.ReadFile(r.FileIn("hello.txt")); err != nil || string(b) != "hi\n" {
		t.Fatalf("hello.txt = %q, %v", b, err)
	}
	fins := enginetest.Events[event.ToolFinishedData](t, r.Host, event.ToolFinished)
	if len(fins) != 1 || fins[0].Outcome != "ok" {
		t.Fatalf("toolFinished %+v", fins)
	}
	r.WaitEvent(event.AssistantText, "the answer", nil)
	if r.URL == "" || r.Fake == nil {
		t.Fatal("no fake model server")
	}
}

func TestRigWithAMissingCLISkipsOutsideCI(t *testing.T) {
	t.Setenv("CI", "")
	t.Setenv("CORRAL_ENGINES_DIR", t.TempDir())
	ran := make(chan bool, 1)
	t.Run("inner", func(t *testing.T) {
		enginetest.NewRig(t, enginetest.RigConfig{New: script.New, CLI: "no-such-agent"})
		ran <- true
	})
	select {
	case <-ran:
		t.Fatal("the rig went on without its CLI")
	default:
	}
}
