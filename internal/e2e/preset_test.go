package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// offeredTools are the names of the tools a model request offers, in the
// Anthropic, Responses and Chat Completions shapes. A tool whose schema is
// deferred (Claude Code's DeferredToolPlaceholder, which only keeps deferred
// loading on) is not one the model can call, and is left out.
func offeredTools(t *testing.T, req fakemodel.Request) []string {
	t.Helper()
	var body struct {
		Tools []struct {
			Name     string `json:"name"`
			Deferred bool   `json:"defer_loading"`
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		t.Fatalf("model request body: %v", err)
	}
	var names []string
	for _, tool := range body.Tools {
		if tool.Deferred {
			continue
		}
		name := tool.Name
		if name == "" {
			name = tool.Function.Name
		}
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestAgentPresetsReachTheModel runs a session with an agent preset on each
// real CLI that takes one: the instructions are in the model's request,
// beside the engine's own prompt, and where a tool allowlist is given the
// model is offered those tools only. The engines that cannot honour a part
// refuse the session with bad_request.
func TestAgentPresetsReachTheModel(t *testing.T) {
	const instructions = "PRESET-7f3a: answer like a ship's captain."
	tests := []struct {
		engine string
		tools  []string // the allowlist, in the engine's tool names
		refuse string   // what a bad_request says, for an engine that cannot
	}{
		{engine: "claude", tools: []string{"Bash", "Read"}},
		{engine: "copilot", tools: []string{"bash", "view"}},
		{engine: "codex"},
		{engine: "codex", tools: []string{"shell"}, refuse: "cannot narrow the tools"},
		{engine: "acp", refuse: "cannot take an agent preset"},
	}
	for _, tt := range tests {
		name := tt.engine
		if len(tt.tools) > 0 {
			name += "-tools"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := engineByName(t, tt.engine)
			cwd, dir := t.TempDir(), t.TempDir()
			srv, url := startScenario(t, `{"name": "chat", "steps": [], "fallback": {"text": "Aye."}}`, cwd)
			rec := eventlogtest.New(waitLimit)
			opts := options(t, c, dir, cwd, url, rec)
			opts.Spec.Agent = &wire.AgentPreset{Name: "captain", Instructions: instructions, Tools: tt.tools}
			r, err := runner.New(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx := context.Background()
			err = r.Start(ctx)
			if tt.refuse != "" {
				if !errors.Is(err, wire.ErrBadRequest) || !strings.Contains(err.Error(), tt.refuse) {
					t.Fatalf("start: %v; want bad_request saying %q", err, tt.refuse)
				}
				if n := len(srv.Requests()); n != 0 {
					t.Fatalf("the model was asked %d times by a refused session", n)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if reply := r.Do(ctx, command.Send{Text: "Hello there."}); !reply.OK {
				t.Fatal(reply.Error)
			}
			ended := waitFor(rec, t, "turnEnded", ofType(event.TurnEnded))
			if !strings.Contains(string(ended.Data), `"outcome":"done"`) {
				t.Fatalf("turn: %s\n%s", ended.Data, rec.Dump())
			}
			asked := 0
			for _, req := range srv.Requests() {
				if req.API == "" || !req.ContainsText("Hello there.") {
					continue
				}
				asked++
				if !req.ContainsText(instructions) {
					t.Errorf("a model request lacks the preset's instructions: %.2000s", req.Body)
				}
				if len(tt.tools) > 0 {
					if got := offeredTools(t, req); !slices.Equal(got, tt.tools) {
						t.Errorf("the model was offered %v, want %v", got, tt.tools)
					}
				}
			}
			if asked == 0 {
				t.Fatal("the model was never asked the message")
			}
		})
	}
}
