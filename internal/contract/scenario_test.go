package contract

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

// TestScenarioWithTheGoClient: create, send, answer, review, wait, stream,
// feed, terminal, delete, over TCP with the token, as a shell does.
func TestScenarioWithTheGoClient(t *testing.T) {
	sup := testsupervisor.Start(t, testsupervisor.Options{TCP: true})
	if err := os.WriteFile(filepath.Join(sup.Work, "scenario.yaml"), []byte(Scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := sup.TCPClient()
	if h, err := c.Health(ctx); err != nil || !h.OK {
		t.Fatalf("health: %+v %v", h, err)
	}
	s, err := c.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: sup.Work, Scenario: filepath.Join(sup.Work, "scenario.yaml"), Mode: "review"})
	if err != nil || !s.Live {
		t.Fatalf("create: %+v %v", s, err)
	}
	events, err := c.Events(ctx, s.ID, client.EventsOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	r, err := c.Command(ctx, s.ID, command.Send{Text: "build it"})
	if err != nil {
		t.Fatal(err)
	}
	if q := decode[event.Queued](t, r.Result); !strings.HasPrefix(q.ID, "m") {
		t.Fatalf("send: %+v", q)
	}

	ask, err := c.Wait(ctx, s.ID, client.WaitOptions{For: api.WaitHuman})
	if err != nil || !ask.Met {
		t.Fatalf("wait human: %+v %v", ask, err)
	}
	opened := decode[event.Event](t, ask.Events[0])
	askData := decode[event.AskOpenedData](t, opened.Data)
	if r, err = c.Command(ctx, s.ID, command.Answer{AskID: askData.AskID, Decision: command.DecisionAllow}); err != nil {
		t.Fatal(err)
	}
	if a := decode[command.AnswerResult](t, r.Result); a != (command.AnswerResult{AskID: askData.AskID, Decision: command.DecisionAllow}) {
		t.Fatalf("answer: %+v", a)
	}

	review, err := c.Wait(ctx, s.ID, client.WaitOptions{For: api.WaitHuman})
	if err != nil || !review.Met {
		t.Fatalf("wait review: %+v %v", review, err)
	}
	staged := decode[event.Event](t, review.Events[0])
	edit := decode[event.HunkStagedData](t, staged.Data)
	if staged.Type != event.HunkStaged || edit.Edit == nil || len(edit.Edit.Hunks) == 0 {
		t.Fatalf("review decided by %s", review.Events[0])
	}
	if r, err = c.Command(ctx, s.ID, command.DecideHunk{EditID: edit.EditID, HunkID: edit.Edit.Hunks[0].ID, Decision: command.DecisionAccept}); err != nil {
		t.Fatal(err)
	}
	if d := decode[event.HunkDecidedData](t, r.Result); d.Decision != command.DecisionAccept {
		t.Fatalf("decideHunk: %+v", d)
	}

	after := staged.Seq
	ended, err := c.Wait(ctx, s.ID, client.WaitOptions{For: api.WaitTurnEnd, After: &after})
	if err != nil || !ended.Met {
		t.Fatalf("wait turnEnd: %+v %v", ended, err)
	}
	turnEnded := decode[event.Event](t, ended.Events[0])
	if turnEnded.Type != event.TurnEnded || decode[event.TurnEndedData](t, turnEnded.Data).Outcome != "done" {
		t.Fatalf("turnEnd decided by %s", ended.Events[0])
	}

	var seen []event.Event
	for {
		ev, err := events.NextEvent()
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, *ev)
		if ev.Seq != int64(len(seen)) {
			t.Fatalf("seq %d at position %d", ev.Seq, len(seen))
		}
		if ev.Type == event.TurnEnded {
			break
		}
	}
	var types []event.Type
	for _, ev := range seen {
		types = append(types, ev.Type)
	}
	for _, want := range []event.Type{event.QueueChanged, event.AskOpened, event.AskAnswered, event.HunkStaged, event.HunkDecided, event.EditApplied, event.TurnEnded} {
		if !slices.Contains(types, want) {
			t.Fatalf("%s missing from %v", want, types)
		}
	}

	if r, err = c.Command(ctx, s.ID, command.GetStatus{}); err != nil {
		t.Fatal(err)
	}
	if st := decode[command.Status](t, r.Result); st.State != wire.StateIdle || st.LastSeq < turnEnded.Seq {
		t.Fatalf("status: %+v", st)
	}

	// The multiplexed stream from the start: the backlog, then live.
	feed, err := c.Feed(ctx, client.FeedOptions{FromStart: true, Sessions: []string{s.ID}})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	var logged int64
	for {
		it, err := feed.Next()
		if err != nil {
			t.Fatal(err)
		}
		if it.Stream != nil && it.Stream.Type == api.MarkLive {
			break
		}
		if it.Event == nil || it.Session != s.ID || it.Cursor != "" || decode[event.Event](t, it.Event).Seq != logged+1 {
			t.Fatalf("backlog item %+v after seq %d", it, logged)
		}
		logged++
	}
	if logged < int64(len(seen)) {
		t.Fatalf("backlog of %d events, the stream gave %d", logged, len(seen))
	}

	// (The program waits for a line: one that ends before the attach
	// is handed over loses the race, a bug of the terminal hand-over.)
	term, err := c.AttachTerminal(ctx, s.ID, client.TermOptions{TermID: "t1", Command: []string{"sh", "-c", `read line; echo "got:$line"; exit 3`}, Cols: 80, Rows: 24})
	if err != nil {
		t.Fatal(err)
	}
	if err := term.Input(ctx, []byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for {
		ev, err := term.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(ev.Output)
		if ev.Exit != nil {
			if ev.Exit.Code != 3 || !strings.Contains(out.String(), "got:hello") {
				t.Fatalf("terminal: exit %+v, output %q", ev.Exit, out.String())
			}
			break
		}
	}
	term.Close()

	if _, err := c.Session(ctx, "000000000000"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	if _, err := c.Command(ctx, s.ID, command.Answer{AskID: "a999", Decision: command.DecisionDeny}); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("unknown ask: %v", err)
	}
	if err := c.DeleteSession(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := events.Next(); err != nil {
			if !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("the stream of a deleted session ended with %v", err)
			}
			break
		}
	}
	for {
		it, err := feed.Next()
		if err != nil {
			t.Fatal(err)
		}
		if it.Lifecycle != nil && it.Lifecycle.Type == api.LifeDeleted && it.Session == s.ID {
			break
		}
	}
}
