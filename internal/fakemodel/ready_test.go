package fakemodel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// The ready scenarios in testdata/scenarios are shared with the engine
// tests; these tests pin what each one does for each engine's requests.

func loadReady(t *testing.T, name string) Scenario {
	t.Helper()
	sc, err := LoadScenario("testdata/scenarios/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// engineRequest is a streaming request shaped like one engine's, with a
// prompt that states the working directory the way that engine does.
type engineRequest struct {
	name string
	path string
	body func() map[string]any
	// calls reads the names and inputs of the tool calls in a stream.
	calls func(t *testing.T, events []event) (text string, calls []string)
}

var engines = []engineRequest{
	{"claude", "/v1/messages", func() map[string]any {
		b := anthropicBody(true, "create hello.txt", "Write", "Bash", "Read")
		b["messages"] = append(b["messages"].([]any), map[string]any{"role": "system", "content": " - Primary working directory: /wt"})
		return b
	}, func(t *testing.T, events []event) (string, []string) {
		m := accumulateAnthropic(t, events)
		var calls []string
		for _, c := range m.Tools {
			calls = append(calls, c.Name+" "+c.Input)
		}
		return m.Text, calls
	}},
	{"codex", "/v1/responses", func() map[string]any {
		b := responsesBody(true, "<environment_context>\n<cwd>/wt</cwd>\n</environment_context>", "exec_command", "apply_patch", "view_image")
		return b
	}, func(t *testing.T, events []event) (string, []string) {
		r := accumulateResponses(t, events)
		var text string
		var calls []string
		for _, it := range r.Output {
			switch it["type"] {
			case "message":
				text = it["content"].([]any)[0].(map[string]any)["text"].(string)
			case "function_call":
				calls = append(calls, it["name"].(string)+" "+it["arguments"].(string))
			case "custom_tool_call":
				calls = append(calls, it["name"].(string)+" "+it["input"].(string))
			}
		}
		return text, calls
	}},
	{"copilot", "/v1/chat/completions", func() map[string]any {
		b := chatBody(true, true, "create hello.txt", "bash", "create", "view")
		b["messages"].([]any)[0].(map[string]any)["content"] = "You are a test.\n* Current working directory: /wt\n* Operating System: linux"
		return b
	}, func(t *testing.T, events []event) (string, []string) {
		r := accumulateChat(t, events)
		var calls []string
		for _, c := range r.Calls {
			calls = append(calls, c.Name+" "+c.Arguments)
		}
		return r.Text, calls
	}},
}

func TestReadyWriteBashScenarioDrivesEveryEngine(t *testing.T) {
	want := map[string][][]string{
		"claude": {
			{`Write {"file_path":"/wt/hello.txt","content":"hello\n"}`},
			{`Bash {"command":"cat hello.txt","description":"Show hello.txt"}`},
			nil,
		},
		"codex": {
			{"apply_patch *** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"},
			{`exec_command {"cmd":"cat hello.txt","sandbox_permissions":"require_escalated","justification":"Show hello.txt?","yield_time_ms":10000}`},
			nil,
		},
		"copilot": {
			{`create {"path":"/wt/hello.txt","file_text":"hello\n"}`},
			{`bash {"command":"cat hello.txt","description":"Show hello.txt"}`},
			nil,
		},
	}
	wantText := []string{"I'll create the file.", "", "Done."}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			ctx := testContext(t)
			s, url := startServer(t, loadReady(t, "write-bash"))
			// A tool-less side request, like Claude Code's title
			// generation, must not consume the script.
			readAll(t, post(ctx, t, url+"/v1/messages", anthropicBody(false, "name this session"), nil).Body)
			for i := range 3 {
				resp := post(ctx, t, url+e.path, e.body(), nil)
				events, err := readEvents(resp.Body)
				if err != nil {
					t.Fatal(err)
				}
				text, calls := e.calls(t, events)
				if text != wantText[i] || !slices.Equal(calls, want[e.name][i]) {
					t.Errorf("turn %d: text %q calls %q, want %q %q", i, text, calls, wantText[i], want[e.name][i])
				}
			}
			if got := steps(s); !slices.Equal(got, []string{"fallback", "write", "bash", "final"}) {
				t.Errorf("steps %v", got)
			}
		})
	}
}

func TestReadyTextScenario(t *testing.T) {
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			ctx := testContext(t)
			_, url := startServer(t, loadReady(t, "text"))
			events, err := readEvents(post(ctx, t, url+e.path, e.body(), nil).Body)
			if err != nil {
				t.Fatal(err)
			}
			if text, calls := e.calls(t, events); text != "Hello from the fake model." || len(calls) != 0 {
				t.Errorf("text %q calls %v", text, calls)
			}
		})
	}
}

func TestReadyFailureScenarios(t *testing.T) {
	tests := []struct {
		scenario   string
		headers    map[string]string
		wantStatus int
		wantHeader string
	}{
		{"unauthorized", map[string]string{"x-api-key": "wrong", "Authorization": "Bearer wrong"}, 401, ""},
		{"unauthorized-no-retry", nil, 401, "false"},
		{"server-error", nil, 500, ""},
	}
	for _, tt := range tests {
		for _, e := range engines {
			t.Run(tt.scenario+"/"+e.name, func(t *testing.T) {
				ctx := testContext(t)
				_, url := startServer(t, loadReady(t, tt.scenario))
				for range 2 { // retries get the same answer
					resp := post(ctx, t, url+e.path, e.body(), tt.headers)
					body := readAll(t, resp.Body)
					if resp.StatusCode != tt.wantStatus || !strings.Contains(string(body), `"error"`) {
						t.Fatalf("status %d body %s", resp.StatusCode, body)
					}
					if got := resp.Header.Get("x-should-retry"); got != tt.wantHeader {
						t.Errorf("x-should-retry %q", got)
					}
				}
			})
		}
	}
}

func TestReadyCutAndSlowScenarios(t *testing.T) {
	for _, e := range engines {
		t.Run("cut-stream/"+e.name, func(t *testing.T) {
			ctx := testContext(t)
			_, url := startServer(t, loadReady(t, "cut-stream"))
			for range 2 {
				events, err := readEvents(post(ctx, t, url+e.path, e.body(), nil).Body)
				if !errors.Is(err, io.ErrUnexpectedEOF) || len(events) != 4 {
					t.Fatalf("%d events, error %v", len(events), err)
				}
			}
		})
		t.Run("slow-text/"+e.name, func(t *testing.T) {
			ctx := testContext(t)
			s, url := startServer(t, loadReady(t, "slow-text"))
			clientCtx, cancel := context.WithCancel(ctx)
			resp := post(clientCtx, t, url+e.path, e.body(), nil)
			if err := s.WaitHeld(ctx, "slow"); err != nil {
				t.Fatal(err)
			}
			cancel() // the engine stops while the model streams
			_, _ = io.Copy(io.Discard, resp.Body)
			if r := outcomeOf(ctx, t, s, 1); r.Outcome != OutcomeClientGone {
				t.Errorf("outcome %q", r.Outcome)
			}
			if status := s.Requests()[0].Status; status != http.StatusOK {
				t.Errorf("status %d", status)
			}
		})
	}
}
