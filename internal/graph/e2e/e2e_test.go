package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphtest"
	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/internal/testsupervisor"
)

// api is an HTTP client of a supervisor's socket.
type api struct {
	hc *http.Client
}

func newAPI(state string) *api {
	socket := filepath.Join(state, "supervisor.sock")
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", socket)
	}}
	return &api{hc: &http.Client{Transport: tr}}
}

func (a *api) close() { a.hc.CloseIdleConnections() }

// do sends a request and decodes the JSON answer.
func (a *api) do(ctx context.Context, method, path string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://corral/v1"+path, rd)
	if err != nil {
		return 0, nil, err
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, nil, err
	}
	return resp.StatusCode, out, nil
}

func (a *api) must(t *testing.T, method, path string, body any, wantStatus int) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	status, out, err := a.do(ctx, method, path, body)
	if err != nil || status != wantStatus {
		t.Fatalf("%s %s: %d %v %v, want %d", method, path, status, out, err, wantStatus)
	}
	return out
}

// runNode runs a node through the supervisor and checks it passed.
func (a *api) runNode(t *testing.T, run, node string) {
	t.Helper()
	out := a.must(t, "POST", "/graphs/"+run+"/nodes/"+node+"/run", nil, http.StatusOK)
	v, _ := out["verdict"].(map[string]any)
	if v["state"] != "passed" {
		t.Fatalf("%s: %v", node, out)
	}
}

func load(t *testing.T, state, run string) *graph.Run {
	t.Helper()
	st, err := store.ForState(state, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := st.Load(run)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The supervisor is killed with SIGKILL while it runs a node; a supervisor
// started again on the state folder takes the node over (its claim's owner
// is dead), runs it, and the run completes.
func TestSupervisorKilledMidNodeRestartedCompletes(t *testing.T) {
	sup := testsupervisor.Start(t, testsupervisor.Options{})
	state := sup.State
	a := newAPI(state)
	defer a.close()
	repo := graphtest.Repo(t)
	a.must(t, "POST", "/graphs", map[string]any{"runId": "k1", "request": "Write a greeting to hello.txt.", "cwd": repo,
		"policy": graphtest.Policy("crash")}, http.StatusCreated)
	for _, n := range []string{"plan", "setgoal", "critique"} {
		a.runNode(t, "k1", n)
	}
	// implement:U1 hangs in its turn; the request that runs it stays open.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.do(ctx, "POST", "/graphs/k1/nodes/implement:U1/run", nil)
	deadline := time.Now().Add(time.Minute)
	for {
		n := load(t, state, "k1").Node("implement:U1")
		if n.State == graph.StateRunning && len(n.Sessions) == 1 {
			if n.Claim.Ticket.PID != sup.PID() {
				t.Fatalf("the claim's owner is pid %d, not the supervisor's %d", n.Claim.Ticket.PID, sup.PID())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("implement:U1 never started: %+v", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	sup.Kill()
	cancel()
	if n := load(t, state, "k1").Node("implement:U1"); n.State != graph.StateRunning {
		t.Fatalf("after the crash implement:U1 is %s", n.State)
	}

	sup.Restart()
	a.close()
	a.runNode(t, "k1", "implement:U1")
	for _, n := range []string{"test:U1", "gate:U1", "gate:goal", "report"} {
		a.runNode(t, "k1", n)
	}
	r := load(t, state, "k1")
	if r.State != graph.RunComplete {
		t.Fatalf("run %s", r.State)
	}
	n := r.Node("implement:U1")
	if n.Reclaimed != 1 || len(n.Sessions) != 2 {
		t.Fatalf("implement:U1 reclaimed %d times, %d sessions", n.Reclaimed, len(n.Sessions))
	}
	events := a.events(t, "k1")
	var why string
	for _, e := range events {
		if e.Type == graph.EvNodeReclaimed && e.Node == "implement:U1" {
			var d struct{ Why string }
			json.Unmarshal(e.Data, &d)
			why = d.Why
		}
	}
	if !strings.Contains(why, "is dead") {
		t.Fatalf("no nodeReclaimed event naming the dead owner (got %q) in %d events", why, len(events))
	}
	if last := events[len(events)-1]; last.Type != graph.EvRunComplete {
		t.Fatalf("the stream ends with %s", last.Type)
	}
}

// events reads a run's graph events as NDJSON, without following.
func (a *api) events(t *testing.T, run string) []graph.RunEvent {
	t.Helper()
	resp, err := a.hc.Get("http://corral/v1/graphs/" + run + "/events?format=ndjson&follow=false")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out []graph.RunEvent
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var e graph.RunEvent
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("event line %q: %v", line, err)
		}
		out = append(out, e)
	}
	for i, e := range out {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
	}
	return out
}
