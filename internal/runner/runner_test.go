package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

const writeAndRun = `
turns:
  - steps:
      - say: "Writing the file."
      - tool: write
        path: notes.txt
        content: "one\ntwo\nthree\n"
      - tool: shell
        command: "cat notes.txt"
      - say: "Done."
`

func TestTurnRunsToItsEndWithHunkReview(t *testing.T) {
	s := newSession(t, writeAndRun, nil)
	s.do(command.Send{Text: "write notes"})
	staged, i := s.waitType(0, event.HunkStaged)
	d := decode[event.HunkStagedData](t, staged)
	if d.Path != "notes.txt" || len(d.Edit.Hunks) != 1 {
		t.Fatalf("staged %+v", d)
	}
	if _, err := os.Stat(filepath.Join(s.cwd, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("the file exists before review: %v", err)
	}
	s.do(command.DecideHunk{EditID: d.EditID, HunkID: "h1", Decision: command.DecisionAccept})
	ended, _ := s.waitType(i, event.TurnEnded)
	te := decode[event.TurnEndedData](t, ended)
	if te.Outcome != "done" || te.Files != 1 || te.Added != 3 || te.Summary != "1 file · +3 −0" {
		t.Fatalf("turnEnded %+v", te)
	}
	got, err := os.ReadFile(filepath.Join(s.cwd, "notes.txt"))
	if err != nil || string(got) != "one\ntwo\nthree\n" {
		t.Fatalf("file holds %q, %v", got, err)
	}
	fins := s.all(event.ToolFinished)
	if len(fins) != 2 {
		t.Fatalf("%d toolFinished events, want 2:\n%s", len(fins), s.dump())
	}
	cat := decode[event.ToolFinishedData](t, fins[1])
	if cat.Outcome != "ok" || cat.Output != "one\ntwo\nthree\n" {
		t.Fatalf("cat finished %+v", cat)
	}
	if len(s.all(event.Usage)) == 0 || len(s.all(event.Context)) == 0 {
		t.Fatalf("no usage or context events:\n%s", s.dump())
	}
}

const editTwoPlaces = `
turns:
  - steps:
      - tool: write
        path: f.txt
        content: "A\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nB\n"
`

func TestHunkDecisions(t *testing.T) {
	base := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"
	cases := []struct {
		name      string
		decisions map[string]string
		want      string
		outcome   string
	}{
		{"all accepted", map[string]string{"h1": "accept", "h2": "accept"}, "A\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nB\n", "ok"},
		{"some accepted", map[string]string{"h1": "reject", "h2": "accept"}, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\nB\n", "partial"},
		{"none accepted", map[string]string{"h1": "reject", "h2": "reject"}, base, "denied"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t, editTwoPlaces, nil)
			path := filepath.Join(s.cwd, "f.txt")
			if err := os.WriteFile(path, []byte(base), 0o644); err != nil {
				t.Fatal(err)
			}
			s.do(command.Send{Text: "edit"})
			staged, i := s.waitType(0, event.HunkStaged)
			d := decode[event.HunkStagedData](t, staged)
			if len(d.Edit.Hunks) != 2 {
				t.Fatalf("want 2 hunks, got %d", len(d.Edit.Hunks))
			}
			for _, h := range []string{"h1", "h2"} {
				s.do(command.DecideHunk{HunkID: d.EditID + "/" + h, Decision: c.decisions[h], Note: "note " + h})
			}
			fin, _ := s.waitType(i, event.ToolFinished)
			fd := decode[event.ToolFinishedData](t, fin)
			if fd.Outcome != c.outcome {
				t.Fatalf("tool outcome %q, want %q (%s)", fd.Outcome, c.outcome, fd.Message)
			}
			if c.outcome != "ok" && !strings.Contains(fd.Message, "note h1") {
				t.Fatalf("the model is not told the reviewer's notes: %q", fd.Message)
			}
			s.waitType(i, event.TurnEnded)
			got, _ := os.ReadFile(path)
			if string(got) != c.want {
				t.Fatalf("file holds %q, want %q", got, c.want)
			}
		})
	}
}

func TestAutoModeRejectReverseAppliesOneHunk(t *testing.T) {
	sc := editTwoPlaces + `
      - sleepMs: 60000
`
	s := newSession(t, sc, func(sp *wire.Spec) { sp.Mode = "auto" })
	path := filepath.Join(s.cwd, "f.txt")
	os.WriteFile(path, []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"), 0o644)
	s.do(command.Send{Text: "edit"})
	staged, i := s.waitType(0, event.HunkStaged)
	d := decode[event.HunkStagedData](t, staged)
	if !d.Auto {
		t.Fatal("auto mode staged an edit for review")
	}
	s.waitType(i, event.ToolFinished)
	// The hunk id alone names it: the turn applied one edit
	// (supervisor hunk ID h2 reject, docs/commands.md).
	s.do(command.DecideHunk{HunkID: "h2", Decision: command.DecisionReject})
	got, _ := os.ReadFile(path)
	if want := "A\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n"; string(got) != want {
		t.Fatalf("after rejecting h2: %q, want %q", got, want)
	}
	s.do(command.Stop{})
	_, i = s.waitType(i, event.TurnEnded)
	// The turn has ended: its auto-applied hunks stay revertible until the
	// next turn starts.
	s.do(command.DecideHunk{EditID: d.EditID, HunkID: "h1", Decision: command.DecisionReject})
	if got, _ := os.ReadFile(path); string(got) != "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n" {
		t.Fatalf("after rejecting h1 once the turn ended: %q", got)
	}
	s.do(command.Send{Text: "next"})
	s.waitType(i, event.TurnStarted)
	reply := s.r.Do(context.Background(), command.DecideHunk{EditID: d.EditID, HunkID: "h2", Decision: command.DecisionAccept})
	if reply.OK || reply.Error.Code != wire.CodeNotFound {
		t.Fatalf("a decision once the next turn started was not refused: %+v", reply)
	}
}

const asked = `
turns:
  - steps:
      - tool: shell
        command: "uptime"
      - say: "after"
`

func TestAskAnsweredAllowAndDeny(t *testing.T) {
	for _, decision := range []string{command.DecisionAllow, command.DecisionDeny} {
		t.Run(decision, func(t *testing.T) {
			s := newSession(t, asked, nil)
			s.do(command.Send{Text: "go"})
			ev, i := s.waitType(0, event.AskOpened)
			a := decode[event.AskOpenedData](t, ev)
			if a.Command != "uptime" || a.Category != "shell" || a.Reason == "" {
				t.Fatalf("ask %+v", a)
			}
			if st := s.r.status(); st.State != wire.StateWaitingForApproval || len(st.OpenAsks) != 1 {
				t.Fatalf("status while asking: %+v", st)
			}
			s.do(command.Answer{AskID: a.AskID, Decision: decision, Note: "because"})
			reply := s.r.Do(context.Background(), command.Answer{AskID: a.AskID, Decision: decision})
			if reply.OK {
				t.Fatal("a second answer to the same ask was taken")
			}
			fin, _ := s.waitType(i, event.ToolFinished)
			fd := decode[event.ToolFinishedData](t, fin)
			want := map[string]string{command.DecisionAllow: "ok", command.DecisionDeny: "denied"}[decision]
			if fd.Outcome != want {
				t.Fatalf("outcome %q, want %q", fd.Outcome, want)
			}
			// Once the ask is closed, another answer is still a
			// conflict, not an unknown ask (issue 18, finding 7).
			late := s.r.Do(context.Background(), command.Answer{AskID: a.AskID, Decision: decision})
			if late.OK || late.Error.Code != wire.CodeConflict {
				t.Fatalf("a late second answer: %+v", late)
			}
			s.waitType(i, event.TurnEnded)
		})
	}
}

func TestUnattendedAskFailsAtOnce(t *testing.T) {
	s := newSession(t, asked, func(sp *wire.Spec) { sp.Unattended = true })
	s.do(command.Send{Text: "go"})
	ev, _ := s.waitType(0, event.Failure)
	if f := decode[event.FailureData](t, ev); f.Code != event.FailPermissionUnavailable {
		t.Fatalf("failure %+v", f)
	}
	s.waitType(0, event.TurnEnded)
	if n := len(s.all(event.AskOpened)); n != 0 {
		t.Fatalf("an unattended session opened %d asks", n)
	}
}

const slow = `
turns:
  - steps:
      - say: "first"
      - tool: shell
        command: "ls"
      - sleepMs: 300
      - tool: shell
        command: "pwd"
      - say: "end of first"
  - steps:
      - say: "second"
`

func TestSecondSendIsQueuedAndSteerLandsAtToolBoundary(t *testing.T) {
	s := newSession(t, slow, nil)
	s.do(command.Send{Text: "one"})
	_, i := s.waitType(0, event.TurnStarted)
	s.do(command.Send{Text: "two"})
	res := s.do(command.Steer{Text: "keep it short"})
	if !strings.Contains(string(res), "boundary") {
		t.Fatalf("steer result %s", res)
	}
	steer, j := s.waitType(i, event.SteerDelivered)
	if decode[event.SteerData](t, steer).ToolID == "" {
		t.Fatal("steer was not delivered at a tool boundary")
	}
	s.waitFor(j, "steer acknowledgement", func(ev event.Event) bool {
		return ev.Type == event.AssistantText && strings.Contains(string(ev.Data), "keep it short")
	})
	first, k := s.waitType(i, event.TurnEnded)
	second, _ := s.waitType(k+1, event.TurnStarted)
	if decode[event.TurnEndedData](t, first).Turn != 1 || decode[event.TurnStartedData](t, second).Text != "two" {
		t.Fatalf("queue order wrong:\n%s", s.dump())
	}
	msgs := s.all(event.UserMessage)
	if len(msgs) != 2 || !decode[event.UserMessageData](t, msgs[1]).Queued {
		t.Fatalf("second message not marked queued:\n%s", s.dump())
	}
}

func TestSteerWithoutBoundaryBecomesNextMessage(t *testing.T) {
	sc := `
turns:
  - steps:
      - say: "thinking"
      - sleepMs: 200
      - say: "done"
fallback:
  steps:
    - say: "fallback"
`
	s := newSession(t, sc, nil)
	s.do(command.Send{Text: "one"})
	_, i := s.waitType(0, event.TurnStarted)
	s.do(command.Steer{Text: "also this"})
	rq, j := s.waitType(i, event.SteerRequeued)
	if decode[event.SteerData](t, rq).Text != "also this" {
		t.Fatal("wrong steer requeued")
	}
	next, _ := s.waitType(j, event.TurnStarted)
	if decode[event.TurnStartedData](t, next).Text != "also this" {
		t.Fatalf("requeued steer did not start the next turn:\n%s", s.dump())
	}
}

func TestStopMidTurnKillsTheCommandAndClearsEverything(t *testing.T) {
	sc := `
turns:
  - steps:
      - tool: shell
        command: "sleep 30"
  - steps:
      - say: "never"
`
	s := newSession(t, sc, func(sp *wire.Spec) { sp.Allow = []string{"sleep *"} })
	s.do(command.Send{Text: "one"})
	s.do(command.Send{Text: "two"})
	_, i := s.waitType(0, event.ToolStarted)
	res := s.do(command.Stop{})
	if !strings.Contains(string(res), `"interruptedTurn":true`) || !strings.Contains(string(res), `"clearedQueue":1`) {
		t.Fatalf("stop receipt %s", res)
	}
	fin, _ := s.waitType(i, event.ToolFinished)
	if decode[event.ToolFinishedData](t, fin).Outcome != "stopped" {
		t.Fatalf("tool finished %s", fin.Data)
	}
	ended, endedAt := s.waitType(i, event.TurnEnded)
	if decode[event.TurnEndedData](t, ended).Outcome != "stopped" {
		t.Fatalf("turn ended %s", ended.Data)
	}
	// The log says the turn ended before it says the stop is done.
	if _, stoppedAt := s.waitType(i, event.Stopped); stoppedAt < endedAt {
		t.Fatalf("stopped (event %d) before turnEnded (event %d)", stoppedAt, endedAt)
	}
	if st := s.r.status(); len(st.Queued) != 0 || st.State != wire.StateStopped {
		t.Fatalf("after stop: %+v", st)
	}
}

func TestStopDeniesOpenAsksAndRejectsPendingHunks(t *testing.T) {
	s := newSession(t, asked, nil)
	s.do(command.Send{Text: "go"})
	ev, _ := s.waitType(0, event.AskOpened)
	a := decode[event.AskOpenedData](t, ev)
	s.do(command.Stop{})
	ans, _ := s.waitFor(0, "askAnswered", func(e event.Event) bool { return e.Type == event.AskAnswered })
	d := decode[event.AskAnsweredData](t, ans)
	if d.AskID != a.AskID || d.By != "stopped" || d.Decision != command.DecisionDeny {
		t.Fatalf("ask answered %+v", d)
	}
}

func TestResumeClosesLeftoversAndContinuesSeq(t *testing.T) {
	s := newSession(t, asked, nil)
	s.do(command.Send{Text: "go"})
	s.waitType(0, event.AskOpened)
	// Simulate a crash: the log stays as it is, the runner is abandoned.
	s.r.Flush()
	last := s.r.evlog().LastSeq()
	spec := s.r.Spec()
	s.r.evlog().Close()

	s2 := &session{t: t, dir: s.dir, cwd: s.cwd}
	s2.start(spec)
	ans, _ := s2.waitType(0, event.AskAnswered)
	if ans.Seq != last+1 || decode[event.AskAnsweredData](t, ans).By != "expired" {
		t.Fatalf("resume: first event %d %s, want seq %d askAnswered by expired", ans.Seq, ans.Data, last+1)
	}
	ended, _ := s2.waitType(0, event.TurnEnded)
	if decode[event.TurnEndedData](t, ended).Outcome != "interrupted" {
		t.Fatalf("open turn closed as %s", ended.Data)
	}
	s2.waitType(0, event.SessionResumed)
}

func TestCommandErrors(t *testing.T) {
	s := newSession(t, writeAndRun, nil)
	cases := []struct {
		cmd  command.Request
		code wire.Code
	}{
		{unknownCommand{"bogus"}, wire.CodeBadRequest},
		{unknownCommand{""}, wire.CodeBadRequest},
		{command.Send{}, wire.CodeBadRequest},
		{command.Answer{AskID: "a99", Decision: "allow"}, wire.CodeNotFound},
		{command.Answer{AskID: "a1", Decision: "maybe"}, wire.CodeBadRequest},
		{command.DecideHunk{EditID: "e9", HunkID: "h1", Decision: "accept"}, wire.CodeNotFound},
		{command.SetMode{Mode: "yolo"}, wire.CodeBadRequest},
		{command.CancelQueued{MessageID: "m42"}, wire.CodeNotFound},
		// Input limits (issue 18, finding 6): refused before anything.
		{command.SetGoal{Goal: strings.Repeat("<", 1<<20)}, wire.CodeBadRequest},
		{command.Send{Text: strings.Repeat("x", wire.MaxMessageBytes+1)}, wire.CodeBadRequest},
		{command.Steer{Text: strings.Repeat("x", wire.MaxMessageBytes+1)}, wire.CodeBadRequest},
	}
	for _, c := range cases {
		reply := s.r.Do(context.Background(), c.cmd)
		if reply.OK || reply.Error.Code != c.code {
			t.Errorf("%+v: reply %+v, want code %s", c.cmd, reply, c.code)
		}
	}
}

// A steer that arrives as a turn ends, after the engine has returned, is
// not left behind: it becomes the next message.
func TestSteerAsTheTurnEndsBecomesTheNextMessage(t *testing.T) {
	eng := &fakeEngine{turn: func(_ context.Context, in engine.TurnInput, _ engine.Host) (engine.TurnResult, error) {
		if in.Text == "one" {
			return engine.TurnResult{}, errors.New("the model is gone")
		}
		return engine.TurnResult{}, nil
	}}
	s := &session{t: t, dir: t.TempDir(), cwd: t.TempDir(), rec: eventlogtest.New(waitLimit)}
	var steered atomic.Bool
	var steerReply *wire.Reply
	mirror := func(b eventlog.Batch) {
		s.record(b)
		// The turn's failure is recorded between the engine's return and
		// turnEnded: steer there, once. (A mirror may not call the runner
		// in general; this event is recorded with none of its locks held.)
		for _, line := range b.Lines {
			if bytes.Contains(line, []byte(`"type":"failure"`)) && steered.CompareAndSwap(false, true) {
				steerReply = s.r.Do(context.Background(), command.Steer{Text: "late steer"})
			}
		}
	}
	r, err := New(Options{Dir: s.dir, Spec: wire.Spec{ID: "s1", Engine: "fake", Cwd: s.cwd},
		Engines: map[string]engine.Factory{"fake": func() engine.Engine { return eng }}, Mirror: mirror})
	if err != nil {
		t.Fatal(err)
	}
	s.r = r
	t.Cleanup(func() { r.Close() })
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.do(command.Send{Text: "one"})
	s.waitFor(0, "the turn the late steer starts", func(e event.Event) bool {
		return e.Type == event.TurnStarted && decode[event.TurnStartedData](t, e).Text == "late steer"
	})
	if steerReply == nil || !steerReply.OK {
		t.Fatalf("steer reply %+v", steerReply)
	}
}

// unknownCommand is a command the runner has no handler for.
type unknownCommand struct{ name command.Name }

func (c unknownCommand) Cmd() command.Name { return c.name }

func TestEveryCommandHasAHandler(t *testing.T) {
	for _, c := range command.Registry {
		if h, ok := handlers[c.Name]; !ok || h.name != c.Name {
			t.Errorf("command %s has no handler", c.Name)
		}
	}
	if len(handlers) != len(command.Registry) {
		t.Errorf("%d handlers for %d commands", len(handlers), len(command.Registry))
	}
}

func TestRenameKeepsTheTitle(t *testing.T) {
	s := newSession(t, writeAndRun, nil)
	var got command.RenameResult
	if err := json.Unmarshal(s.do(command.Rename{Title: " Tidy the docs\t"}), &got); err != nil || got.Title != "Tidy the docs" {
		t.Fatalf("rename = %+v, %v", got, err)
	}
	ev, _ := s.waitType(0, event.Renamed)
	if decode[event.RenamedData](t, ev).Title != "Tidy the docs" {
		t.Fatalf("renamed %s", ev.Data)
	}
	if st := s.r.status(); st.Title != "Tidy the docs" {
		t.Fatalf("status title %q", st.Title)
	}
	spec, _, err := ReadSpec(s.dir)
	if err != nil || spec.Title != "Tidy the docs" {
		t.Fatalf("meta.json %+v, %v", spec, err)
	}
	for name, title := range map[string]string{
		"empty":     "  ",
		"too long":  strings.Repeat("é", wire.MaxTitle+1),
		"two lines": "one\ntwo",
		"escapes":   "a\x1b[2Jb",
	} {
		if r := s.r.Do(context.Background(), command.Rename{Title: title}); !errors.Is(r.Err(), wire.ErrBadRequest) {
			t.Errorf("%s title: %+v", name, r)
		}
	}
	if st := s.r.status(); st.Title != "Tidy the docs" {
		t.Fatalf("a refused rename changed the title to %q", st.Title)
	}
	if r := s.r.Do(context.Background(), command.Rename{Title: strings.Repeat("é", wire.MaxTitle)}); !r.OK {
		t.Fatalf("a title of %d characters: %+v", wire.MaxTitle, r.Error)
	}
}
