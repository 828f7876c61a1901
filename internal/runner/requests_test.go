package runner

import (
	"context"
	"sync"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// TestARetriedSendActsOnce sends the same message with one requestId again
// and again, at once and one after another, and once more to a new runner
// on the same folder: one message is queued, every attempt gets its reply.
func TestARetriedSendActsOnce(t *testing.T) {
	s := newSession(t, `{"turns": [], "fallback": {"steps": [{"say": "ok"}]}}`, nil)
	ctx := command.WithRequestID(context.Background(), "r-1")
	replies := make([]*wire.Reply, 8)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Go(func() { replies[i] = s.r.Do(ctx, command.Send{Text: "once"}) })
	}
	wg.Wait()
	first := decodeResult[event.Queued](t, replies[0].Result)
	for i, reply := range replies {
		if !reply.OK || decodeResult[event.Queued](t, reply.Result) != first {
			t.Fatalf("attempt %d: %+v, want the first reply %+v", i, reply, first)
		}
	}
	s.waitType(0, event.TurnEnded)
	// Another requestId is another message; the same id on another
	// command is a conflict.
	other := s.r.Do(command.WithRequestID(context.Background(), "r-2"), command.Send{Text: "once"})
	if !other.OK || decodeResult[event.Queued](t, other.Result).ID == first.ID {
		t.Fatalf("a second requestId: %+v", other)
	}
	if reply := s.r.Do(ctx, command.Stop{}); reply.OK || reply.Error.Code != wire.CodeConflict {
		t.Fatalf("requestId of a send on a stop: %+v", reply)
	}
	s.r.Flush()
	if err := s.r.Close(); err != nil {
		t.Fatal(err)
	}
	s.start(wire.Spec{ID: "s1", Cwd: s.cwd, Engine: "script", Scenario: s.r.Spec().Scenario})
	again := s.r.Do(ctx, command.Send{Text: "once"})
	if !again.OK || decodeResult[event.Queued](t, again.Result) != first {
		t.Fatalf("a retry to a new runner: %+v, want %+v", again, first)
	}
	count := 0
	for _, ev := range s.rec.All(event.UserMessage) {
		if decode[event.UserMessageData](t, ev).RequestID == "r-1" {
			count++
		}
	}
	if count != 1 {
		t.Fatalf("%d userMessages for requestId r-1:\n%s", count, s.dump())
	}
}

// TestARefusedCommandRunsAgainOnRetry: only replies that succeeded are
// kept, so a retry of a refused command acts.
func TestARefusedCommandRunsAgainOnRetry(t *testing.T) {
	l := newRequestLog()
	runs := 0
	refuse := func() *wire.Reply { runs++; return wire.ErrReply(wire.ErrConflict) }
	succeed := func() *wire.Reply { runs++; return wire.OKReply(map[string]int{"n": runs}) }
	l.once("r", "send", refuse)
	l.once("r", "send", succeed)
	l.once("r", "send", succeed)
	if runs != 2 {
		t.Fatalf("ran %d times, want 2", runs)
	}
	for i := range maxRequests + 1 {
		l.remember(string(rune('a'+i%26))+string(rune(i)), "stop", wire.OKReply(nil))
	}
	if len(l.done) > maxRequests || len(l.order) != len(l.done) {
		t.Fatalf("kept %d (order %d), bound %d", len(l.done), len(l.order), maxRequests)
	}
}
