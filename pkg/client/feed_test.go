package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// TestFeedResumesAfterACutAndIsResetByARestart follows every session of a
// real supervisor: a cut connection resumes from the last cursor with
// nothing lost or repeated; after a restart the old cursor means nothing,
// and the stream says so with a streamReset mark.
func TestFeedResumesAfterACutAndIsResetByARestart(t *testing.T) {
	sup := testsupervisor.Start(t, testsupervisor.Options{})
	ctx := ctxFor(t)
	cut := newCutter(t, sup.Socket)
	via, err := client.New(client.Options{Socket: cut.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	feed, err := via.Feed(ctx, client.FeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	s, err := sup.Client.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: sup.Work, Scenario: writeScenario(t, sup.Work)})
	if err != nil {
		t.Fatal(err)
	}
	seqs := map[int64]bool{}
	readUntil := func(match func(*api.FeedItem) bool) {
		t.Helper()
		for {
			it, err := feed.Next()
			if err != nil {
				t.Fatal(err)
			}
			if it.Event != nil {
				var ev event.Event
				mustDecode(t, it.Event, &ev)
				if seqs[ev.Seq] {
					t.Fatalf("seq %d came twice", ev.Seq)
				}
				seqs[ev.Seq] = true
			}
			if match(it) {
				return
			}
		}
	}
	turnEnded := func(it *api.FeedItem) bool {
		var ev event.Event
		return it.Event != nil && mustDecode(t, it.Event, &ev) && ev.Type == event.TurnEnded
	}
	send := func(text string) {
		t.Helper()
		if _, err := sup.Client.Command(ctx, s.ID, command.Send{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	send("one")
	readUntil(turnEnded)
	cut.sever()
	send("two")
	readUntil(turnEnded)
	for seq := int64(1); seq <= int64(len(seqs)); seq++ {
		if !seqs[seq] {
			t.Fatalf("seq %d is missing from %v", seq, seqs)
		}
	}
	sup.Restart()
	readUntil(func(it *api.FeedItem) bool { return it.Stream != nil && it.Stream.Type == api.MarkReset })
	send("three")
	readUntil(turnEnded)
}

func TestWaitForTheTurnAndForIdleness(t *testing.T) {
	sup := testsupervisor.Start(t, testsupervisor.Options{})
	ctx := ctxFor(t)
	s, err := sup.Client.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: sup.Work, Scenario: writeScenario(t, sup.Work)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sup.Client.Command(ctx, s.ID, command.Send{Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	r, err := sup.Client.Wait(ctx, s.ID, client.WaitOptions{For: api.WaitTurnEnd})
	if err != nil || !r.Met || len(r.Events) != 1 {
		t.Fatalf("turnEnd: %+v %v", r, err)
	}
	var ev event.Event
	if mustDecode(t, r.Events[0], &ev); ev.Type != event.TurnEnded || r.LastSeq < ev.Seq {
		t.Fatalf("turnEnd decided by %s (last seq %d)", r.Events[0], r.LastSeq)
	}
	if r, err := sup.Client.Wait(ctx, s.ID, client.WaitOptions{}); err != nil || !r.Met || r.Status == nil || r.Status.State != wire.StateIdle {
		t.Fatalf("idle: %+v %v", r, err)
	}
	// Nothing will open an ask: the deadline passes, Met is false.
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if r, err := sup.Client.Wait(short, s.ID, client.WaitOptions{For: api.WaitHuman}); err != nil || r.Met {
		t.Fatalf("human: %+v %v", r, err)
	}
}
