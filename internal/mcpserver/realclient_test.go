package mcpserver

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphtest"
	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/internal/testsupervisor"
)

// The pinned Claude Code CLI, configured with `supervisor mcp` as its MCP
// server and pointed at the fake model server, opens a graph run and
// drives it to complete: the fake model's turns call the graph tools, each
// step waiting for the tool result the previous one should have given.
func TestClaudeCodeDrivesAGraphRunThroughSupervisorMCP(t *testing.T) {
	claude := filepath.Join(testenv.NeedEngineCLI(t, "claude"), "node_modules", ".bin", "claude")
	supervisorBin, _ := testsupervisor.Binaries(t)
	sup := testsupervisor.Start(t, testsupervisor.Options{})
	state := sup.State
	repo := graphtest.Repo(t)

	// Each node, and the verdict its passing result carries (Claude Code
	// hands the model a tool's structured content).
	nodes := []struct{ id, verdict string }{{"plan", "planned"}, {"setgoal", "specified"}, {"critique", "sound"},
		{"implement:U1", "implemented"}, {"test:U1", "tested"}, {"gate:U1", "accept"}, {"gate:goal", "verified"}, {"report", "reported"}}
	steps := []fakemodel.Step{{
		Name: "open",
		Tools: fakemodel.ToolSet{Default: []fakemodel.ToolCall{{Name: "mcp__corral__graph_open", Input: mustJSON(t, map[string]any{
			"runId": "cc", "request": "Write a greeting to hello.txt.", "cwd": repo, "policy": graphtest.Policy("happy")})}}},
	}}
	expect := `"runId":"cc"`
	for _, n := range nodes {
		steps = append(steps, fakemodel.Step{
			Name:  "run " + n.id,
			Match: &fakemodel.Match{ToolResultContains: expect},
			Tools: fakemodel.ToolSet{Default: []fakemodel.ToolCall{{Name: "mcp__corral__graph_run", Input: mustJSON(t, map[string]any{"runId": "cc", "node": n.id})}}},
		})
		expect = `"state":"passed","stageOk":true,"verdict":"` + n.verdict + `"`
	}
	steps = append(steps,
		fakemodel.Step{Name: "status", Match: &fakemodel.Match{ToolResultContains: expect},
			Tools: fakemodel.ToolSet{Default: []fakemodel.ToolCall{{Name: "mcp__corral__graph_status", Input: mustJSON(t, map[string]any{"runId": "cc"})}}}},
		fakemodel.Step{Name: "final", Match: &fakemodel.Match{ToolResultContains: `"state":"complete"`}, Text: "The graph run is complete."},
	)
	srv := fakemodel.New(fakemodel.Scenario{Name: "drive a graph run", Steps: steps, Match: &fakemodel.Match{HasTools: ptr(true)}})
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	home := t.TempDir()
	cfg := filepath.Join(home, "mcp.json")
	writeJSON(t, cfg, map[string]any{"mcpServers": map[string]any{
		"corral": map[string]any{"command": supervisorBin, "args": []string{"mcp", "--state", state}},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Drive the graph run to complete.",
		"--mcp-config", cfg, "--strict-mcp-config",
		"--allowedTools", "mcp__corral__graph_open,mcp__corral__graph_run,mcp__corral__graph_status",
		"--output-format", "json")
	cmd.Dir = repo
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8",
		"ANTHROPIC_BASE_URL=" + url, "ANTHROPIC_API_KEY=test-key", "CLAUDE_CONFIG_DIR=" + home,
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	var stdout, stderr testio.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("claude: %v\nstdout: %s\nstderr: %s\n%s", err, stdout.String(), stderr.String(), requestLog(srv))
	}
	var result struct {
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &result); err != nil || result.IsError || result.Result != "The graph run is complete." {
		t.Fatalf("claude's result %s (%v)\n%s", stdout.String(), err, requestLog(srv))
	}
	st, err := store.ForState(state, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Load("cc")
	if err != nil {
		t.Fatal(err)
	}
	if r.State != graph.RunComplete || len(r.Outcome.Shipped) != 1 {
		t.Fatalf("run %s, outcome %+v", r.State, r.Outcome)
	}
	if got, _ := os.ReadFile(filepath.Join(repo, "hello.txt")); string(got) != "Hello from the graph!\n" {
		t.Fatalf("hello.txt holds %q", got)
	}
}

func requestLog(srv *fakemodel.Server) string {
	var b strings.Builder
	for _, r := range srv.Requests() {
		b.WriteString(r.Step + " " + r.Note + "\n")
		// The newest message says what the last tool call returned.
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if raw, err := json.Marshal(r.Body); err == nil && json.Unmarshal(raw, &body) == nil && len(body.Messages) > 0 {
			last := string(body.Messages[len(body.Messages)-1])
			if len(last) > 600 {
				last = last[:600] + "…"
			}
			b.WriteString("  last message: " + last + "\n")
		}
	}
	return b.String()
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	if err := os.WriteFile(path, mustJSON(t, v), 0o600); err != nil {
		t.Fatal(err)
	}
}

func ptr[T any](v T) *T { return &v }
