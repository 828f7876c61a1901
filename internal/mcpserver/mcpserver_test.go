package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph/drivers"
	"github.com/corral-dev/corral/internal/graph/graphtest"
	"github.com/corral-dev/corral/internal/graph/service"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// connect serves the tools over a session manager on the real runner and
// returns a client session.
func connect(t *testing.T) (*mcp.ClientSession, string) {
	t.Helper()
	m, state := graphtest.Manager(t)
	sessions := drivers.Manager(m)
	svc, err := service.New(service.Config{State: state, Sessions: sessions})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Config{Service: svc, Sessions: sessions, Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		cancel()
	})
	return cs, graphtest.Repo(t)
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// ok calls a tool that must succeed and decodes its structured output.
func ok(t *testing.T, cs *mcp.ClientSession, name string, args, out any) *mcp.CallToolResult {
	t.Helper()
	res := call(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s failed: %s", name, text(res))
	}
	if out != nil {
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s's output: %v", name, err)
		}
	}
	return res
}

var toolNames = []string{"graph_open", "graph_next", "graph_run", "graph_submit", "graph_retry", "graph_status",
	"session_new", "session_send", "session_wait", "session_answer", "session_decide_hunk", "session_status", "session_stop", "session_events"}

func TestEveryToolHasAnInputSchema(t *testing.T) {
	cs, _ := connect(t)
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		raw, _ := json.Marshal(tool.InputSchema)
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(raw, &schema); err != nil || schema.Type != "object" {
			t.Errorf("%s: input schema %s", tool.Name, raw)
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
		if tool.Name == "graph_submit" && !strings.Contains(string(schema.Properties["result"]), `"type":"object"`) {
			t.Errorf("graph_submit's result is not an object: %s", schema.Properties["result"])
		}
	}
	slices.Sort(names)
	want := slices.Clone(toolNames)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Fatalf("tools %v\nwant %v", names, want)
	}
}

func TestAnAgentDrivesARunToCompleteThroughTheTools(t *testing.T) {
	cs, repo := connect(t)
	var opened struct {
		RunID string
		Ready []struct{ Node string }
	}
	ok(t, cs, "graph_open", map[string]any{"runId": "m1", "request": "Write a greeting to hello.txt.", "cwd": repo, "policy": graphtest.Policy("happy")}, &opened)
	if opened.RunID != "m1" || len(opened.Ready) != 1 || opened.Ready[0].Node != "plan" {
		t.Fatalf("graph_open: %+v", opened)
	}
	for range 20 {
		var next struct {
			State string
			Ready []struct{ Node string }
		}
		ok(t, cs, "graph_next", map[string]any{"runId": "m1"}, &next)
		if next.State != "open" {
			break
		}
		if len(next.Ready) == 0 {
			t.Fatalf("nothing ready in an open run: %+v", next)
		}
		res := ok(t, cs, "graph_run", map[string]any{"runId": "m1", "node": next.Ready[0].Node}, nil)
		line := text(res)
		if strings.Contains(line, "\n") || !strings.HasPrefix(line, next.Ready[0].Node+" passed") {
			t.Fatalf("graph_run's result is not a one-line pass: %q", line)
		}
	}
	var st struct {
		Run struct {
			State   string
			Outcome struct{ Shipped []string }
		}
	}
	ok(t, cs, "graph_status", map[string]any{"runId": "m1"}, &st)
	if st.Run.State != "complete" || !slices.Equal(st.Run.Outcome.Shipped, []string{"U1"}) {
		t.Fatalf("status %+v", st)
	}
	var all struct{ Runs []struct{ RunID string } }
	ok(t, cs, "graph_status", map[string]any{}, &all)
	if len(all.Runs) != 1 || all.Runs[0].RunID != "m1" {
		t.Fatalf("every run: %+v", all)
	}
}

func TestFailuresAreToolErrorsWithTheirCode(t *testing.T) {
	cs, repo := connect(t)
	ok(t, cs, "graph_open", map[string]any{"runId": "m1", "request": "r", "cwd": repo, "policy": graphtest.Policy("happy")}, nil)
	for name, tc := range map[string]struct {
		tool string
		args map[string]any
		code string
	}{
		"unmet deps":    {"graph_run", map[string]any{"runId": "m1", "node": "setgoal"}, "deps_unmet"},
		"unknown node":  {"graph_run", map[string]any{"runId": "m1", "node": "deploy"}, "unknown_node"},
		"unknown run":   {"graph_next", map[string]any{"runId": "nope"}, "unknown_run"},
		"run exists":    {"graph_open", map[string]any{"runId": "m1", "request": "r", "cwd": repo}, "run_exists"},
		"nothing retry": {"graph_retry", map[string]any{"runId": "m1", "subgoal": ""}, "nothing_to_retry"},
		"bad result":    {"graph_submit", map[string]any{"runId": "m1", "node": "plan", "result": map[string]any{"verdict": 3}}, "bad_result"},
		"bad session":   {"session_status", map[string]any{"sessionId": "000000000000"}, "not_found"},
	} {
		t.Run(name, func(t *testing.T) {
			res := call(t, cs, tc.tool, tc.args)
			if !res.IsError || !strings.HasPrefix(text(res), tc.code+": ") {
				t.Fatalf("%s: error %v, text %q; want a tool error with code %s", tc.tool, res.IsError, text(res), tc.code)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			if !strings.Contains(string(raw), `"graphCode":"`+tc.code+`"`) {
				t.Errorf("structured error %s", raw)
			}
		})
	}
	res := call(t, cs, "graph_run", map[string]any{"runId": "m1"})
	if !res.IsError {
		t.Fatalf("a call without a required field succeeded: %q", text(res))
	}
}

func TestSessionTools(t *testing.T) {
	cs, repo := connect(t)
	var created struct{ SessionID string }
	ok(t, cs, "session_new", map[string]any{"engine": "script", "cwd": repo, "scenario": "demo", "mode": "review"}, &created)
	id := created.SessionID
	ok(t, cs, "session_send", map[string]any{"sessionId": id, "text": "Create hello.txt"}, nil)
	// The demo's write is staged for review: a person is needed.
	var w struct {
		State string
		Asks  []struct{ AskID string }
		Edits []struct {
			EditID string
			Hunks  []string
		}
		LastSeq int64
	}
	for range 10 {
		ok(t, cs, "session_wait", map[string]any{"sessionId": id}, &w)
		if w.State != "needsHuman" {
			t.Fatalf("wait: %+v, want needsHuman", w)
		}
		switch {
		case len(w.Asks) > 0:
			ok(t, cs, "session_answer", map[string]any{"sessionId": id, "askId": w.Asks[0].AskID, "decision": "allow"}, nil)
		case len(w.Edits) > 0:
			for _, h := range w.Edits[0].Hunks {
				ok(t, cs, "session_decide_hunk", map[string]any{"sessionId": id, "editId": w.Edits[0].EditID, "hunkId": h, "decision": "accept"}, nil)
			}
		}
		ok(t, cs, "session_wait", map[string]any{"sessionId": id, "from": w.LastSeq + 1}, &w)
		if w.State == "turnEnded" {
			break
		}
	}
	if w.State != "turnEnded" {
		t.Fatalf("the turn never ended: %+v", w)
	}
	var st struct{ State string }
	ok(t, cs, "session_status", map[string]any{"sessionId": id}, &st)
	if st.State != "idle" {
		t.Fatalf("status %+v", st)
	}
	var page struct {
		Events []struct{ Seq int64 }
		Next   int64
		More   bool
	}
	ok(t, cs, "session_events", map[string]any{"sessionId": id, "from": 2, "limit": 3}, &page)
	if len(page.Events) != 3 || page.Events[0].Seq != 2 || page.Next != 5 || !page.More {
		t.Fatalf("page %+v", page)
	}
	ok(t, cs, "session_stop", map[string]any{"sessionId": id}, nil)
	if _, err := os.Stat(repo + "/hello.txt"); err != nil {
		t.Fatalf("the accepted edit was not written: %v", err)
	}
}
