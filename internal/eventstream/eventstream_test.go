package eventstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
)

// sliceStream is a session's log held in memory.
type sliceStream struct {
	evs    []Event
	closed *int
}

func (s *sliceStream) Next(context.Context) (Event, error) {
	if len(s.evs) == 0 {
		return Event{}, io.EOF
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}
func (s *sliceStream) Buffered() bool { return len(s.evs) > 0 }
func (s *sliceStream) Close() error   { *s.closed++; return nil }

// logs opens in-memory logs of events typed by logs[session]'s strings,
// seq 1 on, and counts the streams opened and closed.
type logs struct {
	types          map[string][]string
	opened, closed int
}

func (l *logs) open(_ context.Context, session string, from int64) (Stream, error) {
	types, ok := l.types[session]
	if !ok {
		return nil, fmt.Errorf("no session %s", session)
	}
	l.opened++
	s := &sliceStream{closed: &l.closed}
	for i, typ := range types {
		if seq := int64(i + 1); seq >= from {
			s.evs = append(s.evs, Event{Seq: seq, Type: []byte(typ), Line: []byte(`{"seq":` + fmt.Sprint(seq) + `}`)})
		}
	}
	return s, nil
}

// drain reads a head to its end, describing each item as
// "session:seq:type", or "mark:type" for a stream mark.
func drain(t *testing.T, h *Head) []string {
	t.Helper()
	var out []string
	for h.Pending() {
		ev, ok, err := h.Next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if ev.Kind == FeedMark {
			out = append(out, "mark:"+string(ev.Type))
			continue
		}
		var line struct{ Seq int64 }
		if err := json.Unmarshal(ev.Line, &line); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s:%d:%s", ev.Session, line.Seq, ev.Type))
	}
	return out
}

func TestHeadSendsEachLogInTurnThenTheLiveMark(t *testing.T) {
	tests := []struct {
		name     string
		sessions []string
		from     int64
		types    map[string]bool
		want     []string
	}{
		{"every event", []string{"b", "a"}, 0, nil,
			[]string{"b:1:text", "a:1:turnStarted", "a:2:text", "a:3:turnEnded", "mark:streamLive"}},
		{"from a seq", []string{"a", "b"}, 2, nil,
			[]string{"a:2:text", "a:3:turnEnded", "mark:streamLive"}},
		{"of some types", []string{"a", "b"}, 1, map[string]bool{"text": true},
			[]string{"a:2:text", "b:1:text", "mark:streamLive"}},
		{"no session", nil, 1, nil, []string{"mark:streamLive"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &logs{types: map[string][]string{"a": {"turnStarted", "text", "turnEnded"}, "b": {"text"}}}
			var h Head
			h.SetBacklog(NewBacklog(tc.sessions, tc.from, tc.types, l.open))
			if got := drain(t, &h); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("items %q, want %q", got, tc.want)
			}
			if l.closed != l.opened || l.opened != len(tc.sessions) {
				t.Fatalf("%d logs opened, %d closed, want %d each", l.opened, l.closed, len(tc.sessions))
			}
			if h.Pending() || h.Buffered() {
				t.Fatal("a drained head says it has more")
			}
		})
	}
}

func TestHeadDropsTheLiveEventsTheBacklogCovered(t *testing.T) {
	l := &logs{types: map[string][]string{"a": {"turnStarted", "text", "turnEnded"}, "b": {"text"}}}
	var h Head
	h.SetBacklog(NewBacklog([]string{"a", "b"}, 1, map[string]bool{"turnEnded": true}, l.open))
	drain(t, &h)
	tests := []struct {
		session string
		seq     int64
		sent    bool
	}{
		{"a", 2, true}, // read, though of a type not sent
		{"a", 3, true},
		{"a", 4, false},
		{"b", 1, true},
		{"b", 2, false},
		{"c", 1, false}, // a session born after the backlog
	}
	for _, tc := range tests {
		if got := h.Sent(tc.session, tc.seq); got != tc.sent {
			t.Errorf("Sent(%s, %d) = %v, want %v", tc.session, tc.seq, got, tc.sent)
		}
	}
	var live Head
	if live.Sent("a", 1) {
		t.Error("a head without a backlog drops live events")
	}
	from := Head{}
	from.SetBacklog(NewBacklog(nil, 5, nil, l.open))
	drain(t, &from)
	if !from.Sent("c", 4) || from.Sent("c", 5) {
		t.Error("a backlog from seq 5 does not drop exactly the live events below it")
	}
}

func TestHeadSendsAMarkFirst(t *testing.T) {
	l := &logs{types: map[string][]string{"a": {"text"}}}
	var h Head
	h.SetBacklog(NewBacklog([]string{"a"}, 1, nil, l.open))
	h.SetMark(api.MarkReset, "lost")
	if !h.Buffered() {
		t.Fatal("a head owing a mark is not buffered")
	}
	ev, ok, err := h.Next(context.Background())
	var mark api.StreamMark
	if err != nil || !ok || ev.Kind != FeedMark || json.Unmarshal(ev.Line, &mark) != nil || mark != (api.StreamMark{Type: api.MarkReset, Reason: "lost"}) {
		t.Fatalf("first item %+v (%s), %v, %v: want the reset mark", ev, ev.Line, ok, err)
	}
	if got := drain(t, &h); !reflect.DeepEqual(got, []string{"a:1:text", "mark:streamLive"}) {
		t.Fatalf("then %q", got)
	}
	var none Head
	if _, ok, err := none.Next(context.Background()); ok || err != nil {
		t.Fatalf("the zero head sent an item (%v, %v)", ok, err)
	}
}

func TestHeadReportsALogThatCannotOpenAndCloseReleasesTheOpenLog(t *testing.T) {
	l := &logs{types: map[string][]string{"a": {"text", "text"}}}
	var h Head
	h.SetBacklog(NewBacklog([]string{"a", "gone"}, 1, nil, l.open))
	for range 2 {
		if _, ok, err := h.Next(context.Background()); !ok || err != nil {
			t.Fatalf("%v, %v", ok, err)
		}
	}
	if _, _, err := h.Next(context.Background()); err == nil || errors.Is(err, io.EOF) {
		t.Fatalf("a log that cannot open: %v", err)
	}
	var open Head
	open.SetBacklog(NewBacklog([]string{"a"}, 1, nil, l.open))
	open.Next(context.Background())
	if err := open.Close(); err != nil || l.closed != 2 {
		t.Fatalf("Close: %v; %d of %d logs closed", err, l.closed, l.opened)
	}
}

func TestAppendJSONIsTheFeedItem(t *testing.T) {
	tests := []struct {
		name string
		ev   FeedEvent
		want api.FeedItem
	}{
		{"event", FeedEvent{Kind: FeedSessionEvent, Cursor: []byte("fleet-3-0"), Session: "s1", Line: []byte(`{"seq":1,"type":"text"}`)},
			api.FeedItem{Cursor: "fleet-3-0", Session: "s1", Event: json.RawMessage(`{"seq":1,"type":"text"}`)}},
		{"lifecycle", FeedEvent{Kind: FeedLifecycle, Session: "s1", Line: []byte(`{"type":"sessionLive","ts":"2026-01-02T03:04:05Z"}`)},
			api.FeedItem{Session: "s1", Lifecycle: &api.Lifecycle{Type: api.LifeLive, TS: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}},
		{"mark", Mark(api.MarkLive, ""), api.FeedItem{Stream: &api.StreamMark{Type: api.MarkLive}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got api.FeedItem
			if err := json.Unmarshal(tc.ev.AppendJSON(nil), &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("%s decodes to %+v, want %+v", tc.ev.AppendJSON(nil), got, tc.want)
			}
		})
	}
}
