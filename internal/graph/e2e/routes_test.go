package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphtest"
	"github.com/corral-dev/corral/internal/testsupervisor"
)

func TestTheGraphRoutes(t *testing.T) {
	state := testsupervisor.Start(t, testsupervisor.Options{}).State
	a := newAPI(state)
	defer a.close()
	repo := graphtest.Repo(t)
	open := map[string]any{"runId": "h1", "request": "Write a greeting to hello.txt.", "cwd": repo, "policy": graphtest.Policy("happy")}

	out := a.must(t, "POST", "/graphs", open, http.StatusCreated)
	if out["ok"] != true || out["runId"] != "h1" || out["state"] != "open" {
		t.Fatalf("open: %v", out)
	}
	for name, tc := range map[string]struct {
		method, path string
		body         any
		status       int
		code         string
	}{
		"open twice":      {"POST", "/graphs", open, 409, "run_exists"},
		"unknown field":   {"POST", "/graphs", map[string]any{"request": "r", "txt": 1}, 400, ""},
		"relative cwd":    {"POST", "/graphs", map[string]any{"request": "r", "cwd": "repo"}, 400, "bad_request"},
		"unmet deps":      {"POST", "/graphs/h1/nodes/setgoal/run", nil, 409, "deps_unmet"},
		"unknown node":    {"POST", "/graphs/h1/nodes/deploy/run", nil, 404, "unknown_node"},
		"unknown run":     {"GET", "/graphs/nope", nil, 404, "unknown_run"},
		"nothing retry":   {"POST", "/graphs/h1/retry", map[string]any{}, 409, "nothing_to_retry"},
		"bad result":      {"POST", "/graphs/h1/nodes/plan/submit", map[string]any{"result": map[string]any{"summary": 1}}, 400, "bad_result"},
		"no result":       {"POST", "/graphs/h1/nodes/plan/submit", map[string]any{}, 400, "bad_request"},
		"wrong method":    {"DELETE", "/graphs/h1", nil, 405, ""},
		"run by GET":      {"GET", "/graphs/h1/nodes/plan/run", nil, 405, ""},
		"unknown subpath": {"GET", "/graphs/h1/nodes", nil, 404, ""},
	} {
		t.Run(name, func(t *testing.T) {
			status, body, err := a.do(context.Background(), tc.method, "/"+strings.TrimPrefix(tc.path, "/"), tc.body)
			if err != nil || status != tc.status || body["ok"] != false {
				t.Fatalf("%d %v %v, want %d", status, body, err, tc.status)
			}
			e, _ := body["error"].(map[string]any)
			if tc.code != "" && e["graphCode"] != tc.code {
				t.Fatalf("error %v, want graphCode %s", e, tc.code)
			}
		})
	}
	next := a.must(t, "GET", "/graphs/h1/next", nil, http.StatusOK)
	if ready, _ := next["ready"].([]any); len(ready) != 1 {
		t.Fatalf("next: %v", next)
	}
	for _, n := range []string{"plan", "setgoal", "critique", "implement:U1", "test:U1", "gate:U1", "gate:goal", "report"} {
		a.runNode(t, "h1", n)
	}
	st := a.must(t, "GET", "/graphs/h1", nil, http.StatusOK)
	if run, _ := st["run"].(map[string]any); run["state"] != "complete" {
		t.Fatalf("status: %v", st)
	}
	list := a.must(t, "GET", "/graphs", nil, http.StatusOK)
	if runs, _ := list["runs"].([]any); len(runs) != 1 {
		t.Fatalf("list: %v", list)
	}
	// The SSE stream: id, event and data per event, from a seq on.
	resp, err := a.hc.Get("http://corral/v1/graphs/h1/events?from=3&follow=false")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	blocks := strings.Split(strings.TrimSpace(string(raw)), "\n\n")
	if !strings.HasPrefix(blocks[0], ": ") || !strings.HasPrefix(blocks[1], "id: 3\nevent: ") {
		t.Fatalf("stream starts %q", blocks[:2])
	}
	lastLines := strings.Split(blocks[len(blocks)-1], "\n")
	var e graph.RunEvent
	if err := json.Unmarshal([]byte(strings.TrimPrefix(lastLines[2], "data: ")), &e); err != nil || e.Type != graph.EvRunComplete {
		t.Fatalf("last block %q (%v)", blocks[len(blocks)-1], err)
	}
}

func TestTheGraphCLI(t *testing.T) {
	supervisorBin, _ := testsupervisor.Binaries(t)
	state := testsupervisor.Start(t, testsupervisor.Options{}).State
	repo := graphtest.Repo(t)
	policy := graphtest.Policy("happy")
	policy.Stages[graph.StagePlan] = graph.StagePolicy{Engine: graph.Self}
	raw, _ := json.Marshal(policy)
	cli := func(stdin string, args ...string) (string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, supervisorBin, args...)
		cmd.Dir = repo
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return out.String() + errb.String(), code
	}
	id, code := cli("", "graph", "open", "--state", state, "--policy", string(raw), "Write", "a", "greeting")
	id = strings.TrimSpace(id)
	if code != 0 || !graph.ValidRunID(id) {
		t.Fatalf("graph open: %q exit %d", id, code)
	}
	out, code := cli("", "graph", "run", "--state", state, "--json", id, "plan")
	// --json prints the CLI's envelope (docs/api.md, "The CLI").
	var reply struct {
		OK     bool          `json:"ok"`
		Result graph.Verdict `json:"result"`
	}
	err := json.Unmarshal([]byte(out), &reply)
	v := reply.Result
	if code != 0 || err != nil || !reply.OK || v.Engine != graph.Self || v.Claim == "" {
		t.Fatalf("graph run plan: %q exit %d", out, code)
	}
	out, code = cli(`{"plan": "by hand"}`, "graph", "submit", "--state", state, "--claim", v.Claim, id, "plan")
	if code != 0 || !strings.HasPrefix(out, "plan passed · planned · self") {
		t.Fatalf("graph submit: %q exit %d", out, code)
	}
	out, code = cli("", "graph", "run", "--state", state, id, "critique")
	if code != 1 || !strings.Contains(out, "waits for setgoal") {
		t.Fatalf("graph run out of order: %q exit %d", out, code)
	}
	out, _ = cli("", "graph", "next", "--state", state, id)
	if !strings.HasPrefix(out, "ready") || !strings.Contains(out, "setgoal") {
		t.Fatalf("graph next: %q", out)
	}
	for _, n := range []string{"setgoal", "critique", "implement:U1", "test:U1"} {
		if out, code := cli("", "graph", "run", "--state", state, id, n); code != 0 || !strings.HasPrefix(out, n+" passed") {
			t.Fatalf("graph run %s: %q exit %d", n, out, code)
		}
	}
	out, code = cli("", "graph", "status", "--state", state, id)
	if code != 0 || !strings.Contains(out, "U1  Write hello.txt  impl ✓ → test ✓ → gate ·") || !strings.Contains(out, "Next gate:U1") {
		t.Fatalf("graph status: %q", out)
	}
	out, code = cli("", "watch", "--state", state, "--graph", id, "--tab", "nodes", "--follow=false", "--plain")
	if code != 0 || !strings.Contains(out, "To do (3)") || !strings.Contains(out, "▸ gate:U1 ready") || !strings.Contains(out, "✓ plan passed · planned · self") {
		t.Fatalf("watch --graph: %q", out)
	}
	out, code = cli("", "graph", "retry", "--state", state, id, "U1")
	if code != 1 || !strings.Contains(out, "subgoal U1 has no failure to retry") {
		t.Fatalf("graph retry: %q exit %d", out, code)
	}
	out, code = cli("", "graph", "status", "--state", state, "--json")
	if code != 0 || !strings.Contains(out, `"runId":"`+id+`"`) {
		t.Fatalf("graph status --json: %q", out)
	}
	if _, code := cli("", "graph", "frobnicate"); code != 2 {
		t.Fatalf("an unknown graph command exits %d", code)
	}
}
