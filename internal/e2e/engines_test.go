package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/engines/acp"
	"github.com/corral-dev/corral/internal/engines/claude"
	"github.com/corral-dev/corral/internal/engines/codex"
	"github.com/corral-dev/corral/internal/engines/copilot"
	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// waitLimit guards against hangs; real CLIs start in seconds.
const waitLimit = 2 * time.Minute

// engineCase is one real engine with what it needs.
type engineCase struct {
	name   string
	model  string
	secret string // credential item
	config map[string]string
}

func cases(t *testing.T) []engineCase {
	dir := testenv.NeedEngineCLI(t, "claude")
	testenv.NeedEngineCLI(t, "codex")
	testenv.NeedEngineCLI(t, "copilot")
	testenv.NeedEngineCLI(t, "claude-code-acp")
	testenv.NeedProgram(t, "node")
	cfg := func() map[string]string {
		return map[string]string{locate.KeyEnginesDir: dir, "cacheDir": filepath.Join(os.TempDir(), "corral-e2e-cache")}
	}
	return []engineCase{
		{"claude", "", "anthropic-api-key", cfg()},
		{"codex", "gpt-5.5", "openai-api-key", cfg()},
		{"copilot", "gpt-4.1", "github-token", cfg()},
		{"acp", "", "anthropic-api-key", cfg()},
	}
}

var factories = map[string]engine.Factory{"claude": claude.New, "codex": codex.New, "copilot": copilot.New, "acp": acp.New}

func ofType(typ event.Type) func(event.Event) bool {
	return func(ev event.Event) bool { return ev.Type == typ }
}

func startFake(t *testing.T, cwd, engineName string) string {
	t.Helper()
	file := "write-bash.json"
	if engineName == "acp" {
		file = "write-bash-acp.json" // the same turn in the ACP agent's tools
	}
	return serveScenarioFile(t, file, cwd)
}

// serveScenarioFile serves the fake model's scenario file (in its
// testdata) on loopback, with ${cwd} set to cwd, and returns its URL.
func serveScenarioFile(t *testing.T, file, cwd string) string {
	t.Helper()
	sc, err := fakemodel.LoadScenario(filepath.Join("..", "fakemodel", "testdata", "scenarios", file))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakemodel.New(sc, fakemodel.WithVars(map[string]string{"cwd": cwd}))
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return url
}

func options(t *testing.T, c engineCase, dir, cwd, url string, rec *eventlogtest.Recorder) runner.Options {
	home := t.TempDir()
	return runner.Options{
		Dir:          dir,
		Spec:         wire.Spec{ID: "e2e", Engine: c.name, Cwd: cwd, Model: c.model, ModelEndpoint: url, GoalLimit: 2},
		Engines:      factories,
		Credentials:  map[string]string{c.secret: "test-key"},
		EngineConfig: c.config,
		Env:          []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"},
		Mirror:       rec.Record,
	}
}

// TestRealEnginesThroughTheRunner runs, for each real CLI, a turn that
// writes a file (staged as hunks and accepted) and runs an allowed command,
// then checks usage, the goal check, and a resume in a new runner.
func TestRealEnginesThroughTheRunner(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cwd, dir := t.TempDir(), t.TempDir()
			url := startFake(t, cwd, c.name)
			rec := eventlogtest.New(waitLimit)
			r, err := runner.New(options(t, c, dir, cwd, url, rec))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if err := r.Start(ctx); err != nil {
				t.Fatalf("start: %v", err)
			}
			if reply := r.Do(ctx, command.SetGoal{Goal: "hello.txt exists"}); !reply.OK {
				t.Fatal(reply.Error)
			}
			if reply := r.Do(ctx, command.Send{Text: "Create hello.txt, then show it."}); !reply.OK {
				t.Fatal(reply.Error)
			}
			staged := waitFor(rec, t, "hunkStaged", ofType(event.HunkStaged))
			var st event.HunkStagedData
			if err := json.Unmarshal(staged.Data, &st); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(cwd, "hello.txt")); !os.IsNotExist(err) {
				t.Fatalf("hello.txt was written before review: %v", err)
			}
			for _, h := range st.Edit.Hunks {
				if reply := r.Do(ctx, command.DecideHunk{EditID: st.EditID, HunkID: h.ID, Decision: command.DecisionAccept}); !reply.OK {
					t.Fatal(reply.Error)
				}
			}
			ended := waitFor(rec, t, "turnEnded", ofType(event.TurnEnded))
			var te event.TurnEndedData
			json.Unmarshal(ended.Data, &te)
			if te.Outcome != "done" {
				t.Fatalf("turn ended %s:\n%s", ended.Data, rec.Dump())
			}
			if got, err := os.ReadFile(filepath.Join(cwd, "hello.txt")); err != nil || string(got) != "hello\n" {
				t.Fatalf("hello.txt holds %q (%v)", got, err)
			}
			// The engine's write of the reviewed edit is not captured
			// again (#20 §1): the turn staged that edit alone.
			if n := len(rec.All(event.HunkStaged)); n != 1 {
				t.Fatalf("%d edits staged, want the reviewed one alone:\n%s", n, rec.Dump())
			}
			// The pinned ACP agent reports no usage (ACP's usage
			// reports are newer than it).
			if len(rec.All(event.Usage)) == 0 && c.name != "acp" {
				t.Fatalf("no usage events:\n%s", rec.Dump())
			}
			// The goal loop with goalLimit 2: the fake model's judge answer is
			// no verdict, so the clause counts as unmet, a goal-check turn
			// runs, and the second check stops at the limit. ACP agents
			// cannot judge, so they check once and queue nothing.
			judges := c.name != "acp"
			wantChecks := 2
			if !judges {
				wantChecks = 1
			}
			var gc event.GoalCheckData
			for i := 1; i <= wantChecks; i++ {
				check := waitFor(rec, t, "goalCheck", func(ev event.Event) bool {
					return ev.Type == event.GoalCheck && strings.Contains(string(ev.Data), fmt.Sprintf(`"attempt":%d,`, i))
				})
				json.Unmarshal(check.Data, &gc)
				if len(gc.Clauses) != 1 || gc.Clauses[0].Clause != "hello.txt exists" || gc.Holds {
					t.Fatalf("goal check %d: %s", i, check.Data)
				}
			}
			if judges && !gc.LimitReached {
				t.Fatalf("the goal loop did not stop at its limit: %+v", gc)
			}
			if judges {
				waitFor(rec, t, "the goal-check turn", func(ev event.Event) bool {
					return ev.Type == event.UserMessage && strings.Contains(string(ev.Data), `"kind":"goalCheck"`)
				})
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}

			// Resume in a new runner: the same engine conversation, seq continuing.
			rec2 := eventlogtest.New(waitLimit)
			r2, err := runner.New(options(t, c, dir, cwd, url, rec2))
			if err != nil {
				t.Fatal(err)
			}
			defer r2.Close()
			if err := r2.Start(ctx); err != nil {
				t.Fatalf("resume: %v", err)
			}
			resumed := waitFor(rec2, t, "sessionResumed", ofType(event.SessionResumed))
			var sd event.SessionStartedData
			json.Unmarshal(resumed.Data, &sd)
			if sd.EngineSession == "" || sd.EngineSession != r.Spec().EngineSession {
				t.Fatalf("resumed conversation %q, want %q", sd.EngineSession, r.Spec().EngineSession)
			}
			if reply := r2.Do(ctx, command.Send{Text: "Anything else?"}); !reply.OK {
				t.Fatal(reply.Error)
			}
			again := waitFor(rec2, t, "turnEnded after resume", ofType(event.TurnEnded))
			if !strings.Contains(string(again.Data), `"outcome":"done"`) {
				t.Fatalf("turn after resume: %s\n%s", again.Data, rec2.Dump())
			}
		})
	}
}

// TestRealEnginesPrintMode runs print mode on each real CLI in auto mode:
// the final answer comes back and the file is written.
func TestRealEnginesPrintMode(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cwd := t.TempDir()
			url := startFake(t, cwd, c.name)
			opts := options(t, c, t.TempDir(), cwd, url, eventlogtest.New(waitLimit))
			opts.Mirror = nil
			opts.Spec.Mode = "auto"
			ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
			defer cancel()
			res, err := runner.RunPrint(ctx, opts, "Create hello.txt, then show it.", nil)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK() || !strings.Contains(res.Answer, "Done.") {
				t.Fatalf("print mode: %+v (failure %+v)", res, res.Failure)
			}
			if got, _ := os.ReadFile(filepath.Join(cwd, "hello.txt")); string(got) != "hello\n" {
				t.Fatalf("hello.txt holds %q", got)
			}
		})
	}
}

// startRunner makes a runner of opts and starts it; it is closed when the
// test ends (closing it earlier is fine).
func startRunner(t *testing.T, opts runner.Options) *runner.Runner {
	t.Helper()
	r, err := runner.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if err := r.Start(context.Background()); err != nil {
		t.Fatalf("start: %v", err)
	}
	return r
}

// waitFor waits for the first recorded event that matches.
func waitFor(rec *eventlogtest.Recorder, t *testing.T, what string, match func(event.Event) bool) event.Event {
	t.Helper()
	ev, _ := rec.WaitFor(t, 0, what, match)
	return ev
}
