package mcpserver

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphtest"
	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Two agents, each with its own `supervisor mcp` process, run the same
// node at the same time: exactly one runs it. The node's session waits for
// a person (review mode), so the winner still holds it when the other
// comes.
func TestTwoMCPServersRunningOneNodeRunItOnce(t *testing.T) {
	supervisorBin, _ := testsupervisor.Binaries(t)
	sup := testsupervisor.Start(t, testsupervisor.Options{})
	repo := graphtest.Repo(t)
	var clients []*mcp.ClientSession
	for range 2 {
		cmd := exec.Command(supervisorBin, "mcp", "--state", sup.State)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "agent"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		clients = append(clients, cs)
	}
	p := graphtest.Policy("happy")
	no := false
	sp := p.Stages[graph.StageImplement]
	sp.Mode, sp.Unattended = "review", &no
	p.Stages[graph.StageImplement] = sp
	ok(t, clients[0], "graph_open", map[string]any{"runId": "two", "request": "Write a greeting to hello.txt.", "cwd": repo, "policy": p}, nil)
	for _, n := range []string{"plan", "setgoal", "critique"} {
		ok(t, clients[1], "graph_run", map[string]any{"runId": "two", "node": n}, nil)
	}
	results := make([]*mcp.CallToolResult, 2)
	var wg sync.WaitGroup
	for i, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "graph_run", Arguments: map[string]any{"runId": "two", "node": "implement:U1"}})
			if err != nil {
				t.Errorf("graph_run: %v", err)
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	var ran, refused int
	for _, res := range results {
		switch {
		case res == nil:
		case !res.IsError && strings.Contains(text(res), "waiting for a person"):
			ran++
		case res.IsError && strings.HasPrefix(text(res), "node_running: "):
			refused++
		default:
			t.Errorf("a graph_run answered %q", text(res))
		}
	}
	if ran != 1 || refused != 1 {
		t.Fatalf("%d runs, %d refusals; want one of each", ran, refused)
	}
	st, err := store.ForState(sup.State, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Load("two")
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Node("implement:U1"); n.State != graph.StateRunning || len(n.Sessions) != 1 {
		t.Fatalf("implement:U1 %s with %d sessions", n.State, len(n.Sessions))
	}
}
