package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// judgeScenario answers the goal judge's question with a verdict and
// anything else with a plain reply.
const judgeScenario = `{
  "name": "judged",
  "steps": [],
  "side": [
    {"name": "judge", "match": {"lastUserContains": "Judge, from this session's work"},
     "text": "MET: the word is known — the user said pelican"}
  ],
  "fallback": {"text": "noted"}
}`

// TestCopilotJudgesGoalsOnAFork: a goal check on Copilot asks the question
// on a fork of the conversation (sessions.fork), offered no tools, and
// leaves the question out of the session's conversation.
func TestCopilotJudgesGoalsOnAFork(t *testing.T) {
	c := engineByName(t, "copilot")
	cwd, dir := t.TempDir(), t.TempDir()
	srv, url := startScenario(t, judgeScenario, cwd)
	rec := eventlogtest.New(waitLimit)
	r := startRunner(t, options(t, c, dir, cwd, url, rec))
	ctx := context.Background()
	if reply := r.Do(ctx, command.SetGoal{Goal: "the word is known"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	if reply := r.Do(ctx, command.Send{Text: "remember the word pelican"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	check := waitFor(rec, t, "goalCheck", ofType(event.GoalCheck))
	var gc event.GoalCheckData
	json.Unmarshal(check.Data, &gc)
	if !gc.Holds || len(gc.Clauses) != 1 || !strings.Contains(gc.Clauses[0].Evidence, "pelican") {
		t.Fatalf("goal check %s: want the judge's verdict", check.Data)
	}
	var judged bool
	for _, req := range srv.Requests() {
		if !req.ContainsText("Judge, from this session's work") {
			continue
		}
		judged = true
		if !req.ContainsText("remember the word pelican") {
			t.Errorf("the judge did not see the conversation: %.2000s", req.Body)
		}
		if tools := offeredTools(t, req); len(tools) != 0 {
			t.Errorf("the judge was offered tools: %v", tools)
		}
	}
	if !judged {
		t.Fatal("the judge's question never reached the model")
	}
	if reply := r.Do(ctx, command.Send{Text: "and now?"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	waitFor(rec, t, "the second turn's end", func(ev event.Event) bool {
		return ev.Type == event.TurnEnded && strings.Contains(string(ev.Data), `"turn":2`)
	})
	for _, req := range srv.Requests() {
		if req.ContainsText("and now?") && req.ContainsText("Judge, from this session's work") {
			t.Fatalf("the judge's question entered the conversation: %.2000s", req.Body)
		}
	}
}

// TestCopilotForksThroughTheRunner: forkSession on Copilot continues the
// session under a new id on a fork of the conversation (sessions.fork),
// and the original conversation stays as it was.
func TestCopilotForksThroughTheRunner(t *testing.T) {
	c := engineByName(t, "copilot")
	cwd, sessions := t.TempDir(), t.TempDir()
	srv, url := startScenario(t, `{"name": "chat", "steps": [], "fallback": {"text": "noted"}}`, cwd)
	rec := eventlogtest.New(waitLimit)
	opts := options(t, c, filepath.Join(sessions, "orig"), cwd, url, rec)
	opts.Spec.ID = "orig"
	r := startRunner(t, opts)
	ctx := context.Background()
	orig := r.Spec()
	if reply := r.Do(ctx, command.Send{Text: "remember the word pelican"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	_, at := rec.WaitType(t, 0, event.TurnEnded)
	reply := r.Do(ctx, command.ForkSession{})
	if !reply.OK {
		t.Fatal(reply.Error)
	}
	forked := r.Spec()
	if forked.ID == orig.ID || forked.EngineSession == "" || forked.EngineSession == orig.EngineSession {
		t.Fatalf("after the fork the spec is %+v; was %+v", forked, orig)
	}
	if reply := r.Do(ctx, command.Send{Text: "what was the word?"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	ended, _ := rec.WaitType(t, at+1, event.TurnEnded)
	if !strings.Contains(string(ended.Data), `"outcome":"done"`) {
		t.Fatalf("the turn after the fork: %s\n%s", ended.Data, rec.Dump())
	}
	i := slices.IndexFunc(srv.Requests(), func(req fakemodel.Request) bool { return req.ContainsText("what was the word?") })
	if i < 0 || !srv.Requests()[i].ContainsText("remember the word pelican") {
		t.Fatalf("the fork's model request lacks the conversation it forked")
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	// The original session resumes its own conversation, without the
	// fork's turn.
	rec2 := eventlogtest.New(waitLimit)
	opts2 := options(t, c, filepath.Join(sessions, "orig"), cwd, url, rec2)
	opts2.Spec = wire.Spec{}
	r2 := startRunner(t, opts2)
	if got := r2.Spec().EngineSession; got != orig.EngineSession {
		t.Fatalf("the original session resumed conversation %s, want %s", got, orig.EngineSession)
	}
	if reply := r2.Do(ctx, command.Send{Text: "still there?"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	rec2.WaitType(t, 0, event.TurnEnded)
	for _, req := range srv.Requests() {
		if req.ContainsText("still there?") && req.ContainsText("what was the word?") {
			t.Fatal("the original conversation holds the fork's turn")
		}
	}
}
