package supervisor

import (
	"context"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// readerUnderTest is a child's output reader for session s, fed through a
// pipe, with a hub of that session to watch.
func readerUnderTest(t *testing.T) (*child, *io.PipeWriter, *hub) {
	t.Helper()
	m, err := New(Config{StateDir: t.TempDir(), RunnerPath: "/nonexistent/runner", Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	c := &child{log: zap.NewNop(), hooks: childHooks{hub: m.hub, observer: m.cfg.Observer}, session: "s",
		now: time.Now, pending: map[string]chan wire.Message{}}
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.read(pr, 0)
	}()
	t.Cleanup(func() { pw.Close(); <-done })
	return c, pw, m.hub("s")
}

func mirrorLine(seq int64) []byte {
	return wire.AppendMirror(nil, seq, []byte(`{"seq":`+strconv.FormatInt(seq, 10)+`,"type":"assistantDelta","data":{"text":"x"}}`))
}

func TestMirroredEventsArePublishedBeforeTheReplyWrittenAfterThem(t *testing.T) {
	c, pw, h := readerUnderTest(t)
	sub, _, err := h.subscribe(16)
	if err != nil {
		t.Fatal(err)
	}
	// Unbuffered and not read until the events are in: a reader that
	// delivered the reply first would wait here with the events unpublished.
	reply := make(chan wire.Message)
	c.pending["1"] = reply
	var out []byte
	for seq := int64(1); seq <= 3; seq++ {
		out = append(out, mirrorLine(seq)...)
	}
	out = append(out, `{"t":"commandReply","reqId":"1","outcome":"ran","reply":{"ok":true}}`+"\n"...)
	go pw.Write(out) // one write: the reader finds all four lines at hand
	expectSeqs(t, sub, 3, "not published before the reply that follows it was delivered")
	select {
	case <-reply:
	case <-time.After(10 * time.Second):
		t.Fatal("no reply")
	}
}

func TestMirroredEventsArePublishedWithoutWaitingForMoreOutput(t *testing.T) {
	_, pw, h := readerUnderTest(t)
	sub, _, err := h.subscribe(16)
	if err != nil {
		t.Fatal(err)
	}
	// Two whole lines and the start of a third: the reader must publish
	// the two, though the rest of the third never comes.
	out := append(mirrorLine(1), mirrorLine(2)...)
	out = append(out, `{"t":"mirror","seq":3,"ev`...)
	go pw.Write(out)
	expectSeqs(t, sub, 2, "not published while the reader waits for the rest of a line")
}

// expectSeqs waits for events 1 to last on sub, in order; missing says
// what it means when one does not come.
func expectSeqs(t *testing.T, sub *subscription, last int64, missing string) {
	t.Helper()
	for want := int64(1); want <= last; want++ {
		select {
		case ev := <-sub.ch:
			if ev.Seq != want {
				t.Fatalf("got seq %d, want %d", ev.Seq, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d %s", want, missing)
		}
	}
}

func TestLineSlabKeepsLinesApart(t *testing.T) {
	var s lineSlab
	var kept []Event
	for seq := int64(1); seq <= 200; seq++ { // more than one block
		raw := mirrorLine(seq)
		m, ok := wire.ParseMirrorEvent(raw[:len(raw)-1])
		if !ok || m.Err != nil {
			t.Fatalf("parse %q: %v", raw, m.Err)
		}
		ev := s.keep(Event{Seq: m.EventSeq, Type: m.Type, Line: m.Event})
		clear(raw) // the reader's buffer is reused
		kept = append(kept, ev)
	}
	big := make([]byte, slabSize)
	for i := range big {
		big[i] = 'x'
	}
	if got := s.copy(big); &got[0] == &s.block[:1][0] {
		t.Fatal("a line larger than a quarter block was cut from the block")
	}
	for i, ev := range kept {
		seq := int64(i + 1)
		want := `{"seq":` + strconv.FormatInt(seq, 10) + `,"type":"assistantDelta","data":{"text":"x"}}`
		if string(ev.Line) != want || string(ev.Type) != "assistantDelta" || ev.Seq != seq {
			t.Fatalf("kept %d: %q type %q", seq, ev.Line, ev.Type)
		}
		if cap(ev.Line) != len(ev.Line) {
			t.Fatalf("kept %d: an append could reach the next line (cap %d, len %d)", seq, cap(ev.Line), len(ev.Line))
		}
		_ = append(ev.Line, "overwrite"...)
	}
	for i, ev := range kept {
		if ev.Line[len(ev.Line)-1] != '}' || ev.Line[0] != '{' {
			t.Fatalf("kept %d damaged by an append to another: %q", i+1, ev.Line)
		}
	}
}
