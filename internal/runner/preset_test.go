package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

const presetScenario = `
name: preset
turns:
  - steps:
      - tool: read
        path: notes.txt
      - tool: write
        path: hello.txt
        content: "hi\n"
      - say: "Done."
`

func TestAgentPresetToolsNarrowWhatTheScriptEngineMayCall(t *testing.T) {
	s := newSession(t, presetScenario, func(spec *wire.Spec) {
		spec.Agent = &wire.AgentPreset{Name: "reader", Tools: []string{"Read"}}
	})
	os.WriteFile(filepath.Join(s.cwd, "notes.txt"), []byte("notes\n"), 0o600)
	s.do(command.Send{Text: "go"})
	s.waitType(0, event.TurnEnded)
	finished := s.all(event.ToolFinished)
	if len(finished) != 2 {
		t.Fatalf("tool calls finished: %d\n%s", len(finished), s.dump())
	}
	read, write := decode[event.ToolFinishedData](t, finished[0]), decode[event.ToolFinishedData](t, finished[1])
	if read.Outcome != "ok" {
		t.Fatalf("the allowed Read: %+v", read)
	}
	if write.Outcome != "error" || !strings.Contains(write.Message, "not among the session's tools") {
		t.Fatalf("the Write the preset leaves out: %+v", write)
	}
	if n := len(s.all(event.HunkStaged)); n != 0 {
		t.Fatalf("%d edits staged for a tool the session does not have", n)
	}
}

func TestAgentPresetInstructionsLengthenTheScriptPrompt(t *testing.T) {
	inputOf := func(preset *wire.AgentPreset) int64 {
		s := newSession(t, "name: plain\nturns:\n  - steps:\n      - say: hi\n", func(spec *wire.Spec) { spec.Agent = preset })
		s.do(command.Send{Text: "go"})
		ev, _ := s.waitType(0, event.Usage)
		return decode[event.UsageData](t, ev).InputTokens
	}
	plain := inputOf(nil)
	long := inputOf(&wire.AgentPreset{Instructions: strings.Repeat("Be brief. ", 40)})
	if long-plain != 100 {
		t.Fatalf("input tokens %d with 400 bytes of instructions, %d without: want 100 more", long, plain)
	}
}

// An engine that does not implement engine.Presetter refuses a preset
// before it starts anything.
func TestAgentPresetRefusedByAnEngineThatCannot(t *testing.T) {
	started := false
	factory := func() engine.Engine { return &startRecorder{started: &started} }
	spec := wire.Spec{ID: "s1", Engine: "plain", Cwd: t.TempDir(), Agent: &wire.AgentPreset{Instructions: "x"}}
	r, err := New(Options{Dir: t.TempDir(), Spec: spec, Engines: map[string]engine.Factory{"plain": factory, "script": script.New}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	err = r.Start(context.Background())
	if !errors.Is(err, wire.ErrBadRequest) || !strings.Contains(err.Error(), "the plain engine cannot take an agent preset") {
		t.Fatalf("start: %v", err)
	}
	if started {
		t.Fatal("the engine was started")
	}
}

// startRecorder is an engine without optional abilities that notes a start.
type startRecorder struct{ started *bool }

func (e *startRecorder) Start(context.Context, engine.StartOptions) (string, error) {
	*e.started = true
	return "c1", nil
}
func (e *startRecorder) Turn(context.Context, engine.TurnInput) (engine.TurnResult, error) {
	return engine.TurnResult{}, nil
}
func (e *startRecorder) Interrupt(context.Context) error { return nil }
func (e *startRecorder) Close() error                    { return nil }
