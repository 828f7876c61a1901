package executor_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/drivers"
	"github.com/corral-dev/corral/internal/graph/executor"
	"github.com/corral-dev/corral/internal/graph/graphtest"
	"github.com/corral-dev/corral/internal/graph/route"
	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/testenv"
)

// A node routed by engine auto to the real Codex CLI, behind a readiness
// probe that runs a real turn against the fake model, completes: its
// result block comes back through Codex and the node passes.
func TestANodeRoutedToTheRealCodexCLICompletes(t *testing.T) {
	engines := testenv.NeedEngineCLI(t, "codex")
	yes := true
	srv := fakemodel.New(fakemodel.Scenario{
		Name:  "codex plans",
		Match: &fakemodel.Match{HasTools: &yes},
		Steps: []fakemodel.Step{
			{Name: "probe", Match: &fakemodel.Match{LastUserContains: "readiness check"}, Text: "READY"},
			{Name: "plan", Match: &fakemodel.Match{LastUserContains: "stage plan"},
				Text: "The plan.\n\n```json\n{\"plan\": \"write hello.txt\", \"summary\": \"planned by codex\"}\n```\n"},
		},
	})
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })

	credsFile := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(credsFile, []byte(`{"openai-api-key": "test-key"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	secrets, err := creds.OpenFile(credsFile)
	if err != nil {
		t.Fatal(err)
	}
	m, state := graphtest.Manager(t, func(c *supervisor.Config) {
		c.Env = []string{"CORRAL_ENGINES_DIR=" + engines}
		c.Credentials = secrets
	})
	st, err := store.ForState(state, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sessions := drivers.Manager(m)
	x := executor.New(st, sessions, route.New(executor.Prober{Sessions: sessions}, 0, nil), nil)
	p := graphtest.Policy("happy")
	p.Stages[graph.StagePlan] = graph.StagePolicy{Engine: graph.EngineAuto, Candidates: []graph.Candidate{{Engine: "codex", Model: "gpt-5.5"}}, ModelEndpoint: url}
	r, err := graph.New(graph.OpenOptions{ID: "r1", Request: "Write a greeting to hello.txt.", Cwd: graphtest.Repo(t), Policy: p, Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	v, err := x.Run(ctx, "r1", "plan")
	if err != nil {
		t.Fatal(err)
	}
	if v.State != graph.StatePassed || v.Engine != "codex" || v.Model != "gpt-5.5" {
		t.Fatalf("verdict %+v\n%v", v, srv.Requests())
	}
	n, _ := st.Load("r1")
	route := n.Node("plan").Route
	if len(route.Probes) != 1 || !route.Probes[0].Ready || !strings.Contains(route.Reason, "codex probe passed") {
		t.Fatalf("route %+v", route)
	}
	if res := st.Results(n)("plan"); res == nil || res.Summary != "planned by codex" {
		t.Fatalf("the plan's result %+v", res)
	}
}
