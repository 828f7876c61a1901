package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestBusRingKeepsTheNewestItems(t *testing.T) {
	tests := []struct {
		name            string
		items, maxBytes int
		publish         int
		lineLen         int
		wantFirst       uint64
	}{
		{"fits", 8, 1 << 20, 5, 10, 1},
		{"count bound", 4, 1 << 20, 10, 10, 7},
		{"byte bound", 64, 35, 10, 10, 8}, // 3 lines of 10 fit in 35 bytes
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBus(tc.items, tc.maxBytes)
			for i := 1; i <= tc.publish; i++ {
				b.publish(busItem{session: "s", seq: int64(i), line: make([]byte, tc.lineLen)})
			}
			got, lapped, _, _ := b.read(tc.wantFirst, make([]busItem, 0, 100))
			if lapped || len(got) == 0 || got[0].seq != int64(tc.wantFirst) || got[len(got)-1].seq != int64(tc.publish) {
				t.Fatalf("from %d: lapped %v, %d items", tc.wantFirst, lapped, len(got))
			}
			if tc.wantFirst > 1 {
				if _, lapped, _, _ := b.read(tc.wantFirst-1, make([]busItem, 0, 100)); !lapped {
					t.Fatalf("item %d should be gone", tc.wantFirst-1)
				}
			}
		})
	}
}

func TestBusCursors(t *testing.T) {
	b := newBus(4, 1<<20)
	c := b.cursor(42)
	if n, ok := b.parseCursor(c); !ok || n != 42 {
		t.Fatalf("parse %q: %d %v", c, n, ok)
	}
	other := newBus(4, 1<<20)
	for _, bad := range []string{other.cursor(42), "", "42", b.epoch + "-x", b.epoch} {
		if _, ok := b.parseCursor(bad); ok && bad != c {
			t.Errorf("cursor %q accepted", bad)
		}
	}
}

// feedItem is a Feed's item, decoded.
type feedItem struct {
	cursor, session string
	kind            FeedKind
	typ             string
	seq             int64
}

func (it feedItem) String() string {
	return fmt.Sprintf("%s:%s#%d", it.session, it.typ, it.seq)
}

func nextItem(t *testing.T, f *Feed) feedItem {
	t.Helper()
	ev, err := f.Next(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	it := feedItem{cursor: string(ev.Cursor), session: ev.Session, kind: ev.Kind, typ: string(ev.Type)}
	if ev.Kind == FeedSessionEvent {
		var e event.Event
		if err := json.Unmarshal(ev.Line, &e); err != nil {
			t.Fatalf("event line %q: %v", ev.Line, err)
		}
		it.seq = e.Seq
		if string(e.Type) != it.typ {
			t.Fatalf("feed says type %s, line %s", it.typ, e.Type)
		}
	}
	return it
}

// readItems reads items until one matches stop.
func readItems(t *testing.T, f *Feed, stop func(feedItem) bool) []feedItem {
	t.Helper()
	var out []feedItem
	for {
		it := nextItem(t, f)
		out = append(out, it)
		if stop(it) {
			return out
		}
	}
}

func TestFeedCarriesEverySessionAndItsLifecycle(t *testing.T) {
	m := newScriptManager(t, "")
	f, err := m.Feed(ctxT(t), FeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, a.ID, command.Send{Text: "hi"})
	got := readItems(t, f, func(it feedItem) bool { return it.typ == "turnEnded" })
	want := []string{
		a.ID + ":sessionCreated#0", a.ID + ":sessionStarted#1", a.ID + ":sessionLive#0",
		a.ID + ":userMessage#2", a.ID + ":queueChanged#3", a.ID + ":queueChanged#4", a.ID + ":turnStarted#5",
		a.ID + ":assistantDelta#6", a.ID + ":assistantText#7", a.ID + ":usage#8", a.ID + ":context#9", a.ID + ":turnEnded#10",
	}
	// The runner's first event and the supervisor's word that it is live
	// race; both orders are right.
	if fmt.Sprint(got) != fmt.Sprint(want) {
		want[1], want[2] = want[2], want[1]
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("items\n got %v\nwant %v", got, want)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].cursor == "" || got[i].cursor == got[i-1].cursor {
			t.Fatalf("cursors %q, %q", got[i-1].cursor, got[i].cursor)
		}
	}
	if err := m.Delete(ctxT(t), a.ID); err != nil {
		t.Fatal(err)
	}
	// The runner's last events as it stops, then the deletion.
	it := nextItem(t, f)
	for it.kind == FeedSessionEvent && it.session == a.ID {
		it = nextItem(t, f)
	}
	if it.kind != FeedLifecycle || it.typ != string(api.LifeDeleted) || it.session != a.ID {
		t.Fatalf("after delete: %v", it)
	}
}

// A writer flushes when Buffered says no item is at hand. Items of the
// ring that the feed's filter drops are not at hand: were they counted,
// the wanted item before them would wait unflushed for the next one.
func TestFeedBufferedIgnoresFilteredItems(t *testing.T) {
	m := newScriptManager(t, "")
	f, err := m.Feed(ctxT(t), FeedOptions{Types: []string{"turnStarted"}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m.bus.publish(busItem{session: "s", seq: 1, typ: []byte("turnStarted"), line: []byte(`{"seq":1,"type":"turnStarted"}`)})
	m.bus.publish(busItem{session: "s", seq: 2, typ: []byte("assistantDelta"), line: []byte(`{"seq":2,"type":"assistantDelta"}`)})
	m.bus.publish(busItem{session: "s", seq: 3, typ: []byte("assistantDelta"), line: []byte(`{"seq":3,"type":"assistantDelta"}`)})
	if it := nextItem(t, f); it.typ != "turnStarted" || it.seq != 1 {
		t.Fatalf("first item %v, want s:turnStarted#1", it)
	}
	if f.Buffered() {
		t.Fatal("Buffered with only filtered items left in the batch: a writer would not flush the turnStarted it wrote")
	}
	m.bus.publish(busItem{session: "s", seq: 4, typ: []byte("turnStarted"), line: []byte(`{"seq":4,"type":"turnStarted"}`)})
	if it := nextItem(t, f); it.typ != "turnStarted" || it.seq != 4 {
		t.Fatalf("next item %v, want s:turnStarted#4", it)
	}
}

func TestFeedFromStartFiltersAndGoesLive(t *testing.T) {
	m := newScriptManager(t, "")
	var ids []string
	for i := range 3 {
		s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
		if err != nil {
			t.Fatal(err)
		}
		mustCommand(t, m, s.ID, command.Send{Text: fmt.Sprint(i)})
		readUntil(t, m, s.ID, 1, "turnEnded")
		ids = append(ids, s.ID)
	}
	f, err := m.Feed(ctxT(t), FeedOptions{FromStart: true, Sessions: []string{ids[0], ids[2]}, Types: []string{"turnEnded", "userMessage", string(api.LifeDeleted)}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := readItems(t, f, func(it feedItem) bool { return it.typ == string(api.MarkLive) })
	want := fmt.Sprint([]string{ids[0] + ":userMessage#2", ids[0] + ":turnEnded#10", ids[2] + ":userMessage#2", ids[2] + ":turnEnded#10", ":streamLive#0"})
	if fmt.Sprint(got) != want {
		t.Fatalf("backlog\n got %v\nwant %v", got, want)
	}
	if got[0].cursor != "" || got[len(got)-1].cursor == "" {
		t.Fatalf("backlog items carry no cursor, the live mark does: %q, %q", got[0].cursor, got[len(got)-1].cursor)
	}
	for _, id := range ids {
		mustCommand(t, m, id, command.Send{Text: "again"})
		readUntil(t, m, id, 1, "turnEnded")
	}
	// Live items of different sessions interleave as the supervisor sees
	// them; each session's come in order.
	ended := 0
	got = readItems(t, f, func(it feedItem) bool {
		if it.typ == "turnEnded" {
			ended++
		}
		return ended == 2
	})
	bySession := map[string][]string{}
	for _, it := range got {
		bySession[it.session] = append(bySession[it.session], it.String())
	}
	for _, id := range []string{ids[0], ids[2]} {
		if want := fmt.Sprint([]string{id + ":userMessage#11", id + ":turnEnded#19"}); fmt.Sprint(bySession[id]) != want {
			t.Fatalf("live items of %s: %v, want %v (all: %v)", id, bySession[id], want, got)
		}
	}
	if len(bySession) != 2 {
		t.Fatalf("live items of other sessions: %v", got)
	}
}

func TestFeedResumesFromACursor(t *testing.T) {
	m := newScriptManager(t, "")
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Feed(ctxT(t), FeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		mustCommand(t, m, s.ID, command.Send{Text: fmt.Sprint(i)})
		readUntil(t, m, s.ID, 1, "turnEnded")
	}
	all := readItems(t, f, func(it feedItem) bool { return it.seq == 28 })
	f.Close()
	// Resume after the fourth item: the rest come again, exactly.
	g, err := m.Feed(ctxT(t), FeedOptions{Cursor: all[3].cursor})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	rest := readItems(t, g, func(it feedItem) bool { return it.seq == 28 })
	if !reflect.DeepEqual(rest, all[4:]) {
		t.Fatalf("resumed\n got %v\nwant %v", rest, all[4:])
	}
	// A cursor of another run gets a reset mark, then live items.
	h, err := m.Feed(ctxT(t), FeedOptions{Cursor: newBus(1, 1).cursor(3)})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if it := nextItem(t, h); it.kind != FeedMark || it.typ != string(api.MarkReset) || it.cursor == "" {
		t.Fatalf("foreign cursor: %v", it)
	}
}

func TestFeedThatFallsBehindTheRingIsReset(t *testing.T) {
	// A ring that the burst's 50 deltas lap, and that holds the whole of
	// a short turn (9 events).
	m := newScriptManager(t, "", func(c *Config) { c.FeedItems = 16 })
	s, err := m.Create(ctxT(t), scriptSpec(t, fmt.Sprintf(`{"turns": [{"match": "burst", "steps": [{"say": %q}]}], "fallback": {"steps": [{"say": "ok"}]}}`,
		strings.TrimSpace(strings.Repeat("word ", 50)))))
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Feed(ctxT(t), FeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := m.bus.position()
	mustCommand(t, m, s.ID, command.Send{Text: "burst"})
	// The log has the events before the supervisor has them: wait for
	// all of the turn (50 deltas among them) to reach it.
	turn := readUntil(t, m, s.ID, 2, "turnEnded")
	waitFor(t, func() bool { return m.bus.position() >= start+uint64(len(turn)) })
	it := nextItem(t, f)
	if it.kind != FeedMark || it.typ != string(api.MarkReset) {
		t.Fatalf("a lapped feed: %v, want a reset mark", it)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "after"})
	if it := nextItem(t, f); it.typ != "userMessage" {
		t.Fatalf("after the reset: %v, want the live items", it)
	}
}

func TestFeedEndsAtShutdown(t *testing.T) {
	m := newScriptManager(t, "")
	f, err := m.Feed(ctxT(t), FeedOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	done := make(chan error, 1)
	go func() {
		_, err := f.Next(ctxT(t))
		done <- err
	}()
	if err := m.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("feed at shutdown: %v", err)
	}
}

func TestFeedReportsReapsAndCrashes(t *testing.T) {
	var clock time.Time
	now := func() time.Time { return clock }
	m := newScriptManager(t, testrunner.CrashOnSend, func(c *Config) { c.Now = now; c.IdleTTL = time.Minute })
	clock = time.Now()
	f, err := m.Feed(ctxT(t), FeedOptions{Types: []string{string(api.LifeReaped), string(api.LifeFailed)}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	a, _ := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	b, _ := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	m.Command(ctxT(t), a.ID, command.Send{Text: "boom"})
	// The send is tried on a new runner after each crash.
	for range sendRetries + 1 {
		if it := nextItem(t, f); it.session != a.ID || it.typ != string(api.LifeFailed) {
			t.Fatalf("after a crash: %v", it)
		}
	}
	clock = clock.Add(2 * time.Minute)
	if n := m.Reap(ctxT(t)); n != 1 {
		t.Fatalf("reaped %d", n)
	}
	if it := nextItem(t, f); it.session != b.ID || it.typ != string(api.LifeReaped) {
		t.Fatalf("after a reap: %v", it)
	}
}

// notLive makes a session with no runner.
func notLive(t *testing.T, m *Manager) string {
	t.Helper()
	spec := scriptSpec(t, echoScenario)
	spec.Mode = "review"
	spec, err := createFolder(m.sessions, spec)
	if err != nil {
		t.Fatal(err)
	}
	return spec.ID
}

func TestCommandsThatNeedNoRunnerStartNone(t *testing.T) {
	m := newScriptManager(t, "")
	id := notLive(t, m)
	log := `{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"sessionStarted","data":{"engine":"script","cwd":"/","mode":"review"}}` + "\n" +
		`{"seq":2,"ts":"2026-01-01T00:00:00Z","type":"askOpened","data":{"askId":"a1","toolId":"t","tool":"Bash","category":"shell","reason":"r"}}` + "\n"
	os.WriteFile(filepath.Join(m.dir(id), eventsFile), []byte(log), 0o600)
	tests := []struct {
		cmd  command.Request
		code wire.Code // "" for a result
		want string
	}{
		{command.Stop{}, "", `{"reason":"user","interruptedTurn":false,"deniedAsks":0,"rejectedHunks":0,"clearedQueue":0}`},
		{command.Answer{AskID: "a1", Decision: "allow"}, wire.CodeNotFound, "no open ask"},
		{command.DecideHunk{EditID: "e1", HunkID: "h1", Decision: "accept"}, wire.CodeNotFound, "no pending hunk"},
		{command.GetStatus{}, "", `"state":"idle"`},
	}
	for _, tc := range tests {
		t.Run(string(tc.cmd.Cmd()), func(t *testing.T) {
			r, err := m.Command(ctxT(t), id, tc.cmd)
			if err != nil {
				t.Fatal(err)
			}
			if tc.code != "" {
				if r.Error == nil || r.Error.Code != tc.code || !strings.Contains(r.Error.Message, tc.want) {
					t.Fatalf("reply %+v, want %s %q", r, tc.code, tc.want)
				}
				return
			}
			if !r.OK || !strings.Contains(string(r.Result), tc.want) {
				t.Fatalf("result %s, want %s", r.Result, tc.want)
			}
		})
	}
	var st command.Status
	json.Unmarshal(mustCommand(t, m, id, command.GetStatus{}), &st)
	if st.LastSeq != 2 || st.Mode != "review" {
		t.Fatalf("status from the folder: %+v", st)
	}
	if m.Live(id) || spawned(t, m, id) {
		t.Fatal("a runner was started")
	}
	// Any other command does start one.
	mustCommand(t, m, id, command.GetGoal{})
	if !m.Live(id) {
		t.Fatal("getGoal did not start the runner")
	}
}

// A human wait without after= is decided at once only when the log holds
// the event of every ask and edit the status calls open: the runner counts
// an ask open just before its askOpened reaches the log, and a wait that
// came in between was met with no event (seen once under load). Until the
// log has them all, the feed decides.
func TestWaitForAPersonAheadOfTheLog(t *testing.T) {
	m := newScriptManager(t, "")
	s, err := m.Create(ctxT(t), scriptSpec(t, askScenario))
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []*command.Status{
		{OpenAsks: []string{"a9"}, LastSeq: 1},
		{PendingEdit: []string{"e9"}, LastSeq: 1},
	} {
		w := &waiter{m: m, id: s.ID, For: api.WaitHuman, live: true, st: st}
		if w.metNow() {
			t.Fatalf("status %+v, whose events the log lacks, met the wait now with events %q", st, w.events)
		}
	}
}

func TestWait(t *testing.T) {
	t.Run("idle at once", func(t *testing.T) {
		m := newScriptManager(t, "")
		s, _ := m.Create(ctxT(t), scriptSpec(t, echoScenario))
		r, err := m.Wait(ctxT(t), s.ID, WaitOptions{For: api.WaitIdle})
		if err != nil || !r.Met || len(r.Events) != 0 || r.LastSeq != 1 {
			t.Fatalf("%+v %v", r, err)
		}
	})
	t.Run("turnEnd after a send", func(t *testing.T) {
		m := newScriptManager(t, "")
		s, _ := m.Create(ctxT(t), scriptSpec(t, askScenario))
		mustCommand(t, m, s.ID, command.Send{Text: "x"})
		done := make(chan api.WaitReply, 1)
		go func() {
			r, err := m.Wait(ctxT(t), s.ID, WaitOptions{For: api.WaitTurnEnd})
			if err != nil {
				t.Error(err)
			}
			done <- r
		}()
		h, err := m.Wait(ctxT(t), s.ID, WaitOptions{For: api.WaitHuman})
		if err != nil || !h.Met || len(h.Events) != 1 || !strings.Contains(string(h.Events[0]), `"askOpened"`) {
			t.Fatalf("human: %+v %v", h, err)
		}
		select {
		case r := <-done:
			t.Fatalf("the turn ended before the ask was answered: %+v", r)
		default:
		}
		mustCommand(t, m, s.ID, command.Answer{AskID: askOf(t, h.Events[0]), Decision: "allow"})
		r := <-done
		if !r.Met || len(r.Events) != 1 || !strings.Contains(string(r.Events[0]), `"turnEnded"`) || r.Status == nil || r.Status.State != wire.StateIdle {
			t.Fatalf("turnEnd: %+v", r)
		}
		// Waiting past that seq waits for the next turn.
		after := r.LastSeq
		ctx, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
		defer cancel()
		if r, err := m.Wait(ctx, s.ID, WaitOptions{For: api.WaitTurnEnd, After: &after}); err != nil || r.Met {
			t.Fatalf("after the last turn: %+v %v", r, err)
		}
	})
	t.Run("idle once a slow turn is stopped", func(t *testing.T) {
		m := newScriptManager(t, "")
		s, _ := m.Create(ctxT(t), scriptSpec(t, slowScenario))
		mustCommand(t, m, s.ID, command.Send{Text: "x"})
		readUntil(t, m, s.ID, 1, "turnStarted")
		ctx, cancel := context.WithTimeout(ctxT(t), 50*time.Millisecond)
		defer cancel()
		if r, err := m.Wait(ctx, s.ID, WaitOptions{For: api.WaitIdle}); err != nil || r.Met {
			t.Fatalf("while the turn runs: %+v %v", r, err)
		}
		done := make(chan api.WaitReply, 1)
		go func() {
			r, _ := m.Wait(ctxT(t), s.ID, WaitOptions{For: api.WaitIdle})
			done <- r
		}()
		mustCommand(t, m, s.ID, command.Stop{})
		if r := <-done; !r.Met {
			t.Fatalf("after stop: %+v", r)
		}
	})
	t.Run("a session without a runner is idle", func(t *testing.T) {
		m := newScriptManager(t, "")
		id := notLive(t, m)
		r, err := m.Wait(ctxT(t), id, WaitOptions{For: api.WaitIdle})
		if err != nil || !r.Met {
			t.Fatalf("%+v %v", r, err)
		}
		if spawned(t, m, id) {
			t.Fatal("wait started a runner")
		}
	})
	t.Run("deleted while waiting", func(t *testing.T) {
		m := newScriptManager(t, "")
		s, _ := m.Create(ctxT(t), scriptSpec(t, slowScenario))
		mustCommand(t, m, s.ID, command.Send{Text: "x"})
		done := make(chan error, 1)
		go func() {
			// (Not turnEnd: stopping the runner ends its turn.)
			_, err := m.Wait(ctxT(t), s.ID, WaitOptions{For: api.WaitHuman})
			done <- err
		}()
		if err := m.Delete(ctxT(t), s.ID); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !errors.Is(err, wire.ErrNotFound) {
			t.Fatalf("wait on a deleted session: %v", err)
		}
	})
	t.Run("bad for", func(t *testing.T) {
		m := newScriptManager(t, "")
		if _, err := m.Wait(ctxT(t), "x", WaitOptions{For: "lunch"}); !errors.Is(err, wire.ErrBadRequest) {
			t.Fatal(err)
		}
	})
}
