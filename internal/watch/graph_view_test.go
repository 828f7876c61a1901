package watch

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphapi"
)

// noOwners says every claim still holds.
type noOwners struct{}

func (noOwners) Gone(graph.Ticket) (bool, string) { return false, "" }

// sampleRun is a run in the middle of things: U1 shipped, U2 implementing,
// U3 rejected by its gate and waiting for a retry.
func sampleRun(t *testing.T) *graph.Run {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	r, err := graph.New(graph.OpenOptions{ID: "r1", Request: "Add greetings\nin three files", Cwd: "/w", Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	run := func(id string, res *graph.Result, finish bool) {
		n++
		tk := graph.Ticket{PID: 1, Nonce: string(rune('a' + n))}
		if _, err := r.Claim(id, tk, &graph.Route{Engine: "script", Reason: "run policy: engine script"}, noOwners{}, t0.Add(time.Duration(n)*time.Second)); err != nil {
			t.Fatal(err)
		}
		if finish {
			if _, err := r.Finish(id, tk, graph.NodeOutcome{StageOK: true, Result: res}, t0.Add(time.Duration(n)*time.Second)); err != nil {
				t.Fatal(err)
			}
		}
	}
	run("plan", &graph.Result{Plan: "three files"}, true)
	run("setgoal", &graph.Result{Subgoals: []graph.Subgoal{
		{ID: "U1", Title: "Greeting in one.txt"}, {ID: "U2", Title: "Greeting in two.txt"},
		{ID: "U3", Title: "Grüße in drei.txt \x1b[31mred"}}}, true)
	run("critique", &graph.Result{Verdict: "sound"}, true)
	for _, u := range []string{"U1", "U3"} {
		run("implement:"+u, &graph.Result{Summary: "wrote it"}, true)
		run("test:"+u, &graph.Result{Summary: "tested"}, true)
	}
	run("gate:U1", &graph.Result{Verdict: "accept"}, true)
	run("gate:U3", &graph.Result{Verdict: "reject", Reason: "the umlauts are wrong"}, true)
	run("implement:U2", nil, false)
	return r
}

func TestGraphViewMatchesGoldenFiles(t *testing.T) {
	st := graph.StatusOf(sampleRun(t), time.Date(2026, 11, 30, 10, 0, 25, 0, time.UTC))
	for _, tc := range []struct {
		name  string
		tab   GraphTab
		style Style
	}{
		{"graph-flow.txt", FlowTab, PlainStyle()},
		{"graph-nodes.txt", NodesTab, PlainStyle()},
		{"graph-flow.ansi", FlowTab, ANSIStyle()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RenderGraph(st, tc.tab, tc.style)
			if strings.Contains(got, "\x1b[31mred") {
				t.Fatal("an agent's escape sequence reached the terminal")
			}
			checkGolden(t, tc.name, got)
		})
	}
}

// fakeGraphs serves a sequence of statuses, the last one for ever.
type fakeGraphs struct {
	mu    sync.Mutex
	seq   []*graph.RunStatus
	calls int
}

func (f *fakeGraphs) GraphStatus(context.Context, string) (*graphapi.StatusReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.seq[min(f.calls, len(f.seq)-1)]
	f.calls++
	return &graphapi.StatusReply{Run: st}, nil
}

func TestPlainGraphPrintsAFrameAtEachChangeUntilTheRunEnds(t *testing.T) {
	r := sampleRun(t)
	open := graph.StatusOf(r, time.Now())
	same := *open
	done := *open
	done.Rev++
	done.State = graph.RunComplete
	src := &fakeGraphs{seq: []*graph.RunStatus{open, &same, &done}}
	var out strings.Builder
	cfg := config{Options: Options{Graph: "r1", Follow: true}, plain: true}
	if err := plainGraph(context.Background(), cfg, src, FlowTab, &out); err != nil {
		t.Fatal(err)
	}
	if frames := strings.Count(out.String(), "● graph run r1"); frames != 2 {
		t.Fatalf("%d frames, want one per revision:\n%s", frames, out.String())
	}
	if !strings.Contains(out.String(), "────\n● graph run r1 · complete") {
		t.Fatalf("the last frame is not the complete run:\n%s", out.String())
	}
}

func TestTheGraphViewSwitchesTabsAndOnlyReads(t *testing.T) {
	st := graph.StatusOf(sampleRun(t), time.Now())
	m := &graphModel{ctx: context.Background(), src: &fakeGraphs{seq: []*graph.RunStatus{st}}, run: "r1", follow: true, style: PlainStyle()}
	if cmd := m.Init(); cmd == nil {
		t.Fatal("no first read")
	}
	m.Update(m.fetch())
	if !strings.Contains(m.View(), "[1 Flow]") {
		t.Fatalf("the view does not open on Flow:\n%s", m.View())
	}
	for key, want := range map[string]string{"2": "[2 Nodes]", "1": "[1 Flow]", "tab": "[2 Nodes]"} {
		m.Update(tea.KeyMsg(tea.Key{Type: tea.KeyRunes, Runes: []rune(key)}))
		if key == "tab" {
			m.tab = FlowTab
			m.Update(tea.KeyMsg(tea.Key{Type: tea.KeyTab}))
		}
		if !strings.Contains(m.View(), want) {
			t.Fatalf("after %q the view shows:\n%s", key, m.View())
		}
	}
	if _, cmd := m.Update(tea.KeyMsg(tea.Key{Type: tea.KeyRunes, Runes: []rune("q")})); cmd == nil {
		t.Fatal("q does not quit")
	}
	// Every other key is ignored: the view has no way to change the run.
	for _, k := range []string{"y", "n", "x", "s", "m"} {
		if _, cmd := m.Update(tea.KeyMsg(tea.Key{Type: tea.KeyRunes, Runes: []rune(k)})); cmd != nil {
			t.Fatalf("key %q did something", k)
		}
	}
}
