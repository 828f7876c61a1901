package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
)

// claudeCase is the Claude Code engine with the pinned CLI.
func claudeCase(t *testing.T) engineCase {
	dir := testenv.NeedEngineCLI(t, "claude")
	return engineCase{"claude", "", "anthropic-api-key", map[string]string{locate.KeyEnginesDir: dir}}
}

// startScenario serves sc on loopback, with ${cwd} set to cwd.
func startScenario(t *testing.T, sc string, cwd string) (*fakemodel.Server, string) {
	t.Helper()
	scenario, err := fakemodel.ParseScenario([]byte(sc))
	if err != nil {
		t.Fatal(err)
	}
	srv := fakemodel.New(scenario, fakemodel.WithVars(map[string]string{"cwd": cwd}))
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, url
}

// TestClaudeSpendCapTripsMidTurn: Claude Code reports money only with a
// turn's result, so each model call's usage event carries an estimate from
// the price table; a call that crosses the cap stops the turn there, before
// the model is asked again.
func TestClaudeSpendCapTripsMidTurn(t *testing.T) {
	c := claudeCase(t)
	cwd, dir := t.TempDir(), t.TempDir()
	// The first call reads 200,000 tokens: $0.80 at Claude Opus 5.5's
	// list price, over the $0.50 cap, and asks to write a file.
	srv, url := startScenario(t, `{
	  "name": "expensive",
	  "match": {"hasTools": true},
	  "steps": [
	    {"name": "write", "text": "Writing.", "usage": {"input": 200000, "output": 20},
	     "tools": [{"name": "Write", "input": {"file_path": "${cwd}/hello.txt", "content": "hello\n"}}]},
	    {"name": "final", "text": "Done."}
	  ]
	}`, cwd)
	rec := eventlogtest.New(waitLimit)
	opts := options(t, c, dir, cwd, url, rec)
	opts.Spec.SpendCapUSD = 0.5
	r := startRunner(t, opts)
	ctx := context.Background()
	if reply := r.Do(ctx, command.Send{Text: "Create hello.txt."}); !reply.OK {
		t.Fatal(reply.Error)
	}
	usage := waitFor(rec, t, "the first call's usage", ofType(event.Usage))
	var u event.UsageData
	json.Unmarshal(usage.Data, &u)
	if !u.Estimated || u.CostUSD < 0.79 || u.CostUSD > 0.81 {
		t.Fatalf("mid-turn usage %s: want an estimate of $0.80", usage.Data)
	}
	failure := waitFor(rec, t, "the spend cap's failure", ofType(event.Failure))
	var f event.FailureData
	json.Unmarshal(failure.Data, &f)
	if f.Code != event.FailSpendCap {
		t.Fatalf("failure %s, want spendCap", failure.Data)
	}
	stopped := waitFor(rec, t, "stopped", ofType(event.Stopped))
	var sd event.StoppedData
	json.Unmarshal(stopped.Data, &sd)
	if sd.Reason != "spendCap" || !sd.InterruptedTurn {
		t.Fatalf("stopped %s: want the running turn interrupted for the spend cap", stopped.Data)
	}
	ended := waitFor(rec, t, "turnEnded", ofType(event.TurnEnded))
	var te event.TurnEndedData
	json.Unmarshal(ended.Data, &te)
	if te.Outcome != "stopped" {
		t.Fatalf("turn ended %s, want stopped:\n%s", ended.Data, rec.Dump())
	}
	// The turn's exact cost, from the CLI's result, replaces the estimate.
	if te.Usage.Estimated || te.Usage.CostUSD < 0.79 {
		t.Fatalf("turn usage %+v: want the CLI's exact cost of the call", te.Usage)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times; the cap should have stopped the turn after the first call", n)
	}
	if _, err := os.Stat(filepath.Join(cwd, "hello.txt")); !os.IsNotExist(err) {
		t.Fatalf("hello.txt was written: %v", err)
	}
}

// TestClaudeClearRotatesTheSession: /clear empties Claude Code's
// conversation and the CLI goes on in a new one; the session continues
// under a new id (rotated, reason clear) on that conversation, and the
// model no longer sees what came before.
func TestClaudeClearRotatesTheSession(t *testing.T) {
	c := claudeCase(t)
	cwd, dir := t.TempDir(), filepath.Join(t.TempDir(), "first")
	srv, url := startScenario(t, `{"name": "chat", "steps": [], "fallback": {"text": "noted"}}`, cwd)
	rec := eventlogtest.New(waitLimit)
	rotations := make(chan string, 4)
	opts := options(t, c, dir, cwd, url, rec)
	opts.Rotate = func(from, to string) { rotations <- from + ">" + to }
	r := startRunner(t, opts)
	ctx := context.Background()
	before := r.Spec()
	from := takeTurns(t, r, rec, "remember the word pelican", "/clear")
	rotated := waitFor(rec, t, "rotated", ofType(event.Rotated))
	var rd event.RotatedData
	json.Unmarshal(rotated.Data, &rd)
	if rd.Reason != "clear" || rd.From != before.ID || rd.To == "" || rd.To == before.ID {
		t.Fatalf("rotated %s: want reason clear from %s to a new id", rotated.Data, before.ID)
	}
	resumed := waitResumed(t, rec)
	var sd event.SessionStartedData
	json.Unmarshal(resumed.Data, &sd)
	after := r.Spec()
	if after.ID != rd.To || after.EngineSession == "" || after.EngineSession == before.EngineSession || sd.EngineSession != after.EngineSession {
		t.Fatalf("after the clear the spec is %+v (resumed %s); want the new id on a new conversation (was %s)", after, resumed.Data, before.EngineSession)
	}
	if told := <-rotations; told != before.ID+">"+rd.To {
		t.Fatalf("the supervisor was told %s", told)
	}
	// The new session's folder holds its spec; the old keeps its own.
	for id, conv := range map[string]string{before.ID: before.EngineSession, rd.To: after.EngineSession} {
		spec, ok, err := runner.ReadSpec(filepath.Join(filepath.Dir(dir), id))
		if id == before.ID {
			spec, ok, err = runner.ReadSpec(dir)
		}
		if err != nil || !ok || spec.EngineSession != conv {
			t.Fatalf("session %s's stored spec: %+v %v %v; want conversation %s", id, spec, ok, err, conv)
		}
	}

	if reply := r.Do(ctx, command.Send{Text: "what was the word?"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	ended, _ := rec.WaitType(t, from, event.TurnEnded)
	if !strings.Contains(string(ended.Data), `"outcome":"done"`) {
		t.Fatalf("the turn after the clear: %s\n%s", ended.Data, rec.Dump())
	}
	asked := 0
	for _, req := range srv.Requests() {
		if !req.ContainsText("what was the word?") {
			continue
		}
		asked++
		if req.ContainsText("pelican") {
			t.Fatalf("the model saw the conversation from before the clear: %s", req.Body)
		}
	}
	if asked == 0 {
		t.Fatalf("the model was never asked the message after the clear")
	}
}

// TestClaudeClearedSessionResumesInANewRunner: the session a /clear
// rotated to resumes in a new runner, whatever the CLI had written of the
// new conversation when the runner copied the engine's state. The CLI
// appends a conversation's entries from a worker thread, so the turn's
// result can come before them: the copy may hold the new conversation's
// file with no entry, which the CLI neither resumes ("No conversation
// found") nor takes as a new id ("already in use"). The second case puts
// the copy in that state rather than waiting for the race, and the third
// in the one before the CLI has begun the file at all.
func TestClaudeClearedSessionResumesInANewRunner(t *testing.T) {
	c := claudeCase(t)
	for _, tc := range []struct {
		name string
		// damage changes the new session's copy of the conversation file
		// before the next runner starts.
		damage func(t *testing.T, file string)
	}{
		{"as the CLI left it", func(*testing.T, string) {}},
		{"copied before the CLI wrote the clear's entries", keepOnlyMetadata},
		{"copied before the CLI began the file", func(t *testing.T, file string) {
			if err := os.Remove(file); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cwd, sessions := t.TempDir(), t.TempDir()
			srv, url := startScenario(t, `{"name": "chat", "steps": [], "fallback": {"text": "noted"}}`, cwd)
			rec := eventlogtest.New(waitLimit)
			opts := options(t, c, filepath.Join(sessions, "first"), cwd, url, rec)
			r := startRunner(t, opts)
			ctx := context.Background()
			takeTurns(t, r, rec, "remember the word pelican", "/clear")
			resumed := waitResumed(t, rec)
			after := r.Spec()
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(sessions, after.ID)
			files, _ := filepath.Glob(filepath.Join(dir, "engine", "claude", "projects", "*", after.EngineSession+".jsonl"))
			if len(files) != 1 {
				t.Fatalf("the new session's copy of conversation %s: %v", after.EngineSession, files)
			}
			tc.damage(t, files[0])

			rec2 := eventlogtest.New(waitLimit)
			opts2 := options(t, c, dir, cwd, url, rec2)
			opts2.Spec = after
			next := startRunner(t, opts2)
			started := waitResumed(t, rec2)
			if sd := eventlogtest.Decode[event.SessionStartedData](t, started); sd.EngineSession != after.EngineSession {
				t.Fatalf("the new runner started conversation %s, want %s (resumed %s)", sd.EngineSession, after.EngineSession, resumed.Data)
			}
			if reply := next.Do(ctx, command.Send{Text: "what was the word?"}); !reply.OK {
				t.Fatal(reply.Error)
			}
			ended := waitFor(rec2, t, "turnEnded", ofType(event.TurnEnded))
			if !strings.Contains(string(ended.Data), `"outcome":"done"`) {
				t.Fatalf("the turn in the new runner: %s\n%s", ended.Data, rec2.Dump())
			}
			for _, req := range srv.Requests() {
				if req.ContainsText("what was the word?") && req.ContainsText("pelican") {
					t.Fatalf("the model saw the conversation from before the clear: %s", req.Body)
				}
			}
		})
	}
}

// waitResumed waits for the session to resume on its engine, failing at
// once when the engine's start fails instead.
// takeTurns sends each text as a message and waits for its turn's end; it
// returns the index of the recorder's next event.
func takeTurns(t *testing.T, r *runner.Runner, rec *eventlogtest.Recorder, texts ...string) int {
	t.Helper()
	from := 0
	for _, text := range texts {
		if reply := r.Do(context.Background(), command.Send{Text: text}); !reply.OK {
			t.Fatal(reply.Error)
		}
		_, at := rec.WaitType(t, from, event.TurnEnded)
		from = at + 1
	}
	return from
}

func waitResumed(t *testing.T, rec *eventlogtest.Recorder) event.Event {
	t.Helper()
	ev := waitFor(rec, t, "sessionResumed or a failure", func(ev event.Event) bool {
		return ev.Type == event.SessionResumed || ev.Type == event.Failure
	})
	if ev.Type == event.Failure {
		t.Fatalf("the engine did not resume: %s", ev.Data)
	}
	return ev
}

// keepOnlyMetadata rewrites a Claude Code conversation file to the lines
// that are not conversation entries (its mode and cost records), as the
// CLI has them on disk before its worker thread appends the entries.
func keepOnlyMetadata(t *testing.T, file string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var entry struct {
			Type string `json:"type"`
		}
		if json.Unmarshal([]byte(line), &entry) == nil && !slices.Contains([]string{"user", "assistant", "system"}, entry.Type) {
			kept = append(kept, line+"\n")
		}
	}
	if len(kept) == 0 {
		t.Fatalf("no metadata line in %s:\n%s", file, data)
	}
	if err := os.WriteFile(file, []byte(strings.Join(kept, "")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestClaudeInheritForksTheParentConversation: a session that names a
// parent on Claude Code starts on a fork of the parent's conversation (the
// model sees it whole), with no handoff brief, and the parent's
// conversation stays as it was.
func TestClaudeInheritForksTheParentConversation(t *testing.T) {
	c := claudeCase(t)
	cwd, sessions := t.TempDir(), t.TempDir()
	srv, url := startScenario(t, `{"name": "chat", "steps": [], "fallback": {"text": "noted"}}`, cwd)
	ctx := context.Background()

	parentRec := eventlogtest.New(waitLimit)
	popts := options(t, c, filepath.Join(sessions, "parent"), cwd, url, parentRec)
	popts.Spec.ID = "parent"
	parent, err := runner.New(popts)
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if reply := parent.Do(ctx, command.Send{Text: "remember the word pelican"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	parentRec.WaitType(t, 0, event.TurnEnded)
	parentConv := parent.Spec().EngineSession
	if err := parent.Close(); err != nil {
		t.Fatal(err)
	}

	rec := eventlogtest.New(waitLimit)
	opts := options(t, c, filepath.Join(sessions, "child"), cwd, url, rec)
	opts.Spec.ID, opts.Spec.Parent = "child", "parent"
	child := startRunner(t, opts)
	started := waitFor(rec, t, "sessionStarted", ofType(event.SessionStarted))
	var sd event.SessionStartedData
	json.Unmarshal(started.Data, &sd)
	if sd.ForkedFrom != parentConv || sd.EngineSession == "" || sd.EngineSession == parentConv {
		t.Fatalf("sessionStarted %s: want a new conversation forked from the parent's %s", started.Data, parentConv)
	}
	if reply := child.Do(ctx, command.Send{Text: "what was the word?"}); !reply.OK {
		t.Fatal(reply.Error)
	}
	ended := waitFor(rec, t, "turnEnded", ofType(event.TurnEnded))
	if !strings.Contains(string(ended.Data), `"outcome":"done"`) {
		t.Fatalf("the child's turn: %s\n%s", ended.Data, rec.Dump())
	}
	for _, ev := range rec.All(event.UserMessage) {
		if strings.Contains(string(ev.Data), `"kind":"inherit"`) {
			t.Fatalf("a handoff brief was queued although the conversation was forked: %s", ev.Data)
		}
	}
	childReq := 0
	for _, req := range srv.Requests() {
		switch {
		case req.ContainsText("what was the word?"):
			childReq++
			if !req.ContainsText("remember the word pelican") {
				t.Fatalf("the child's model request lacks the parent's conversation: %s", req.Body)
			}
		}
	}
	if childReq == 0 {
		t.Fatal("the model was never asked the child's message")
	}
	// The parent's stored conversation has not grown: the child's turn is
	// in the fork only.
	matches, _ := filepath.Glob(filepath.Join(sessions, "parent", "engine", "claude", "projects", "*", parentConv+".jsonl"))
	if len(matches) != 1 {
		t.Fatalf("the parent's conversation file: %v", matches)
	}
	stored, err := os.ReadFile(matches[0])
	if err != nil || strings.Contains(string(stored), "what was the word?") {
		t.Fatalf("the parent's conversation holds the child's message (%v)", err)
	}
}

// engineByName is one of the real engine cases.
func engineByName(t *testing.T, name string) engineCase {
	all := cases(t)
	return all[slices.IndexFunc(all, func(c engineCase) bool { return c.name == name })]
}
