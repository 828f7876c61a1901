package runner

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestAskBrokerAnswersEachAskExactlyOnce(t *testing.T) {
	cases := []struct {
		name     string
		answer   func(b *askBroker, a *ask) error
		decision string
		by       string
	}{
		{"allowed by a person", func(b *askBroker, a *ask) error { return b.answer(a.id, command.DecisionAllow, "ok") }, command.DecisionAllow, "user"},
		{"denied by a person", func(b *askBroker, a *ask) error { return b.answer(a.id, command.DecisionDeny, "ok") }, command.DecisionDeny, "user"},
		{"denied by a stop", func(b *askBroker, _ *ask) error { b.denyAll("stopped"); return nil }, command.DecisionDeny, "stopped"},
		{"denied at shutdown", func(b *askBroker, _ *ask) error { b.denyAll("shutdown"); return nil }, command.DecisionDeny, "shutdown"},
		{"expired", func(b *askBroker, a *ask) error { b.expire(a.opened.Add(time.Nanosecond)); return nil }, command.DecisionDeny, "expired"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ev emitted
			b := newAskBroker(ev.emit)
			a := b.add("a1", 1)
			if err := c.answer(b, a); err != nil {
				t.Fatal(err)
			}
			// Every later answer, whoever gives it, finds it answered.
			if err := b.answer("a1", command.DecisionAllow, ""); err == nil {
				t.Fatal("a second answer was taken")
			}
			if n := b.denyAll("stopped"); n != 0 {
				t.Fatalf("denyAll denied %d answered asks", n)
			}
			got := b.wait(context.Background(), a)
			if got.decision != c.decision {
				t.Fatalf("the call got %+v, want %s", got, c.decision)
			}
			answers := of[event.AskAnsweredData](&ev, event.AskAnswered)
			if len(answers) != 1 || answers[0].Decision != c.decision || answers[0].By != c.by {
				t.Fatalf("askAnswered events %+v", answers)
			}
		})
	}
}

func TestAskBrokerRefusesBadAnswers(t *testing.T) {
	b := newAskBroker((&emitted{}).emit)
	b.add("a1", 1)
	cases := []struct {
		id, decision string
		code         wire.Code
	}{
		{"a1", "maybe", wire.CodeBadRequest},
		{"a9", command.DecisionAllow, wire.CodeNotFound},
	}
	for _, c := range cases {
		if err := b.answer(c.id, c.decision, ""); codeOf(err) != c.code {
			t.Errorf("answer(%s, %s) = %v, want %s", c.id, c.decision, err, c.code)
		}
	}
}

func TestAskBrokerCancelledCallIsDenied(t *testing.T) {
	var ev emitted
	b := newAskBroker(ev.emit)
	a := b.add("a1", 1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := b.wait(ctx, a); got.decision != command.DecisionDeny {
		t.Fatalf("a withdrawn call got %+v", got)
	}
	if answers := of[event.AskAnsweredData](&ev, event.AskAnswered); len(answers) != 1 || answers[0].By != "cancelled" {
		t.Fatalf("askAnswered events %+v", answers)
	}
	if b.forget(a) != 0 {
		t.Fatal("a forgotten ask is still open")
	}
}

func TestAskBrokerListsAndDeniesOldestFirst(t *testing.T) {
	var ev emitted
	b := newAskBroker(ev.emit)
	for _, a := range []struct {
		id  string
		seq int64
	}{{"a10", 10}, {"a2", 2}, {"a7", 7}} {
		b.add(a.id, a.seq)
	}
	if ids := b.openIDs(); !slices.Equal(ids, []string{"a2", "a7", "a10"}) {
		t.Fatalf("open asks %v", ids)
	}
	if n := b.denyAll("stopped"); n != 3 {
		t.Fatalf("denied %d", n)
	}
	var order []string
	for _, a := range of[event.AskAnsweredData](&ev, event.AskAnswered) {
		order = append(order, a.AskID)
	}
	if !slices.Equal(order, []string{"a2", "a7", "a10"}) {
		t.Fatalf("denied in order %v", order)
	}
	if ids := b.openIDs(); len(ids) != 0 {
		t.Fatalf("open after denyAll: %v", ids)
	}
}

func TestAskBrokerExpiresOnlyOlderAsks(t *testing.T) {
	b := newAskBroker((&emitted{}).emit)
	clock := time.Unix(1000, 0)
	b.now = func() time.Time { return clock }
	b.add("a1", 1)
	clock = clock.Add(time.Minute)
	b.add("a2", 2)
	if n := b.expire(clock); n != 1 {
		t.Fatalf("expired %d asks, want the older one", n)
	}
	if ids := b.openIDs(); !slices.Equal(ids, []string{"a2"}) {
		t.Fatalf("open after expiry: %v", ids)
	}
}
