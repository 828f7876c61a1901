package watch

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// collect runs a feed and gathers its items until stop says so.
func collect(t *testing.T, f *feed, run func(context.Context), stop func([]item) bool) []item {
	t.Helper()
	ch := make(chan item)
	f.out = ch
	if f.retry == 0 {
		f.retry = 20 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()
	var got []item
	timeout := time.After(10 * time.Second)
	for !stop(got) {
		select {
		case it := <-ch:
			got = append(got, it)
		case <-timeout:
			t.Fatalf("gave up; items so far: %+v", got)
		}
	}
	return got
}

// seqs lists the seqs of the events among items, "h" marking hidden ones.
func seqs(items []item, session string) []string {
	var out []string
	for _, it := range items {
		if it.event != nil && it.session == session {
			s := string(rune('0' + it.event.Seq))
			if it.hidden {
				s = "h" + s
			}
			out = append(out, s)
		}
	}
	return out
}

func hasDone(items []item) bool {
	return len(items) > 0 && items[len(items)-1].done
}

func fiveEvents() []ev {
	return []ev{
		{"sessionStarted", `{"engine":"script","mode":"review"}`},
		{"userMessage", `{"id":"m1","text":"go","kind":"send"}`},
		{"turnStarted", `{"turn":1,"messageId":"m1","text":"go"}`},
		{"assistantText", `{"text":"ok"}`},
		{"turnEnded", `{"turn":1,"outcome":"done"}`},
	}
}

func TestFeedShowsOneSessionFromTheFirstSeqAsked(t *testing.T) {
	src := newFakeSource()
	src.add("s1", fiveEvents()...)
	f := &feed{src: src, from: 3, follow: false}
	items := collect(t, f, func(ctx context.Context) { f.one(ctx, "s1") }, hasDone)
	if got, want := seqs(items, "s1"), []string{"h1", "h2", "3", "4", "5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("seqs %v, want %v", got, want)
	}
	var marks []string
	for _, it := range items {
		switch {
		case it.skipped > 0:
			marks = append(marks, fmt.Sprintf("skipped %d", it.skipped))
		case it.live:
			marks = append(marks, "live")
		case it.event != nil && !it.hidden:
			marks = append(marks, fmt.Sprintf("shown %d", it.event.Seq))
		}
	}
	if want := []string{"skipped 2", "shown 3", "shown 4", "shown 5", "live"}; !reflect.DeepEqual(marks, want) {
		t.Errorf("items %v, want %v", marks, want)
	}
}

func TestFeedFollowsAndReconnectsWithoutGapOrRepeat(t *testing.T) {
	src := newFakeSource()
	src.add("s1", fiveEvents()[:2]...)
	src.failAt["s1"] = 4 // the followed stream breaks before seq 4
	f := &feed{src: src, from: 1, follow: true}
	var more sync.Once
	items := collect(t, f, func(ctx context.Context) { f.one(ctx, "s1") }, func(items []item) bool {
		if len(items) > 0 && items[len(items)-1].live {
			more.Do(func() { src.add("s1", fiveEvents()[2:]...) }) // live, once the backlog is read
		}
		return len(seqs(items, "s1")) == 5
	})
	if got, want := seqs(items, "s1"), []string{"1", "2", "3", "4", "5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("seqs %v, want %v", got, want)
	}
	var notices []string
	for _, it := range items {
		if it.notice != "" {
			notices = append(notices, it.notice)
		}
	}
	if len(notices) != 2 || !strings.Contains(notices[0], "reconnecting") || notices[1] != "reconnected" {
		t.Errorf("notices %q, want a reconnecting and a reconnected one", notices)
	}
}

func TestFeedEndsWhenTheSessionIsDeleted(t *testing.T) {
	src := newFakeSource()
	src.add("s1", fiveEvents()...)
	f := &feed{src: src, from: 1, follow: true}
	items := collect(t, f, func(ctx context.Context) { f.one(ctx, "s1") }, func(items []item) bool {
		if len(items) > 0 && items[len(items)-1].live {
			src.remove("s1")
		}
		return hasDone(items)
	})
	if gone := items[len(items)-2]; !gone.gone || gone.session != "s1" {
		t.Errorf("item before done %+v, want s1 gone", gone)
	}
}

func TestFeedOfAnUnknownSessionFails(t *testing.T) {
	src := newFakeSource()
	f := &feed{src: src, from: 1, follow: true}
	items := collect(t, f, func(ctx context.Context) { f.one(ctx, "nope") }, func(items []item) bool { return len(items) == 1 })
	if err := items[0].err; !errors.Is(err, wire.ErrNotFound) || !strings.Contains(err.Error(), "nope") {
		t.Errorf("error %v, want not_found naming the session", err)
	}
}

func TestFeedOfEverySessionShowsOnlyNewEventsAndNewSessions(t *testing.T) {
	src := newFakeSource()
	src.add("s1", fiveEvents()...)
	src.add("s2", fiveEvents()[:3]...)
	f := &feed{src: src, from: liveOnly, follow: true}
	var more sync.Once
	items := collect(t, f, func(ctx context.Context) { f.all(ctx) }, func(items []item) bool {
		lives := 0
		for _, it := range items {
			if it.live {
				lives++
			}
		}
		if lives == 2 {
			more.Do(func() {
				src.add("s2", fiveEvents()[3:]...)
				src.add("s3", fiveEvents()[:1]...)
			})
		}
		return len(seqs(items, "s3")) == 1 && len(seqs(items, "s2")) == 5
	})
	if got, want := seqs(items, "s1"), []string{"h1", "h2", "h3", "h4", "h5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("s1 seqs %v, want %v", got, want)
	}
	if got, want := seqs(items, "s2"), []string{"h1", "h2", "h3", "4", "5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("s2 seqs %v, want %v", got, want)
	}
	if got, want := seqs(items, "s3"), []string{"1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("s3 seqs %v, want %v (a new session is shown whole)", got, want)
	}
	// The backlogs came one session after the other.
	var order []string
	for _, it := range items {
		if it.event != nil && it.hidden && (len(order) == 0 || order[len(order)-1] != it.session) {
			order = append(order, it.session)
		}
	}
	if want := []string{"s1", "s2"}; !reflect.DeepEqual(order, want) {
		t.Errorf("backlog order %v, want %v", order, want)
	}
}

func TestFeedReportsLinesThatAreNotEvents(t *testing.T) {
	out := make(chan item, 1)
	f := &feed{out: out}
	if _, ok := f.event(context.Background(), "s1", []byte(`{"ok":true}`), 0); ok {
		t.Fatal("a line without seq was taken for an event")
	}
	if it := <-out; !strings.Contains(it.notice, "not an event") {
		t.Errorf("notice %q", it.notice)
	}
	if _, ok := f.event(context.Background(), "s1", []byte(`{"seq":3,"type":"usage"}`), 3); ok {
		t.Error("an event already seen was delivered again")
	}
}
