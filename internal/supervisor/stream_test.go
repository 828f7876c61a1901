package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap/zaptest"
)

// fakeLog plays the runner and the child reader: it appends event lines to
// a log file and publishes them to a hub.
type fakeLog struct {
	t    *testing.T
	path string
	f    *os.File
	hub  *hub
	seq  int64
}

func newFakeLog(t *testing.T) *fakeLog {
	path := filepath.Join(t.TempDir(), eventsFile)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &fakeLog{t: t, path: path, f: f, hub: &hub{}}
}

func eventLine(seq int64) []byte {
	return fmt.Appendf(nil, `{"seq":%d,"ts":"2026-01-02T03:04:05Z","type":"assistantDelta","data":{"text":"part %d"}}`, seq, seq)
}

// append writes the next event and publishes it; mirrorFirst publishes
// before the write reaches the file, which the stream must survive too.
func (l *fakeLog) append(mirrorFirst bool) {
	l.seq++
	line := eventLine(l.seq)
	ev := Event{Seq: l.seq, Type: []byte("assistantDelta"), Line: line}
	if mirrorFirst {
		l.hub.publish(ev)
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		l.t.Error(err)
	}
	if !mirrorFirst {
		l.hub.publish(ev)
	}
}

func (l *fakeLog) stream(from int64, follow bool, buf int) *Stream {
	var h *hub
	if follow {
		h = l.hub
	}
	s := newStream(l.path, h, from, buf, wire.DefaultMaxLine, zaptest.NewLogger(l.t))
	l.t.Cleanup(func() { s.Close() })
	return s
}

// collect reads events until seq last and checks they run from first to
// last with no gap and no repeat.
func collect(ctx context.Context, s *Stream, first, last int64, pause time.Duration) error {
	want := first
	for want <= last {
		ev, err := s.Next(ctx)
		if err != nil {
			return fmt.Errorf("waiting for seq %d: %w", want, err)
		}
		if ev.Seq != want {
			return fmt.Errorf("got seq %d, want %d", ev.Seq, want)
		}
		if string(ev.Line) != string(eventLine(want)) || string(ev.Type) != "assistantDelta" {
			return fmt.Errorf("seq %d: line %q type %q", want, ev.Line, ev.Type)
		}
		want++
		if pause > 0 && want%64 == 0 {
			time.Sleep(pause)
		}
	}
	return nil
}

func TestStreamCatchesUpAndFollowsWithoutGapOrDuplicate(t *testing.T) {
	tests := []struct {
		name        string
		mirrorFirst float64 // share of events mirrored before they are written
		buffer      int
		pause       time.Duration // a reader's pause every 64 events
	}{
		{"log written before mirror", 0, 64, 0},
		{"mirror sometimes ahead of the log", 0.3, 64, 0},
		{"slow reader cut off the live feed", 0, 2, time.Millisecond},
		{"slow reader and mirror ahead", 0.3, 1, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const total = 2000
			l := newFakeLog(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			errs := make(chan error, 32)
			var cuts atomic.Int64
			start := func(from int64) {
				s := l.stream(from, true, tc.buffer)
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := collect(ctx, s, max(from, 1), total, tc.pause); err != nil {
						errs <- fmt.Errorf("reader from %d: %w", from, err)
					}
					cuts.Add(int64(s.cuts))
				}()
			}
			start(0)
			start(1)
			rng := rand.New(rand.NewPCG(1, 2))
			for i := range total {
				l.append(rng.Float64() < tc.mirrorFirst)
				if i%400 == 0 {
					// Readers join mid-stream from behind, at, and ahead of the end.
					start(l.seq / 2)
					start(l.seq)
					start(l.seq + 3)
				}
				if i%97 == 0 {
					time.Sleep(100 * time.Microsecond)
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			if tc.pause > 0 && cuts.Load() == 0 {
				t.Error("no reader was ever cut off the live feed; the test proves nothing about slow readers")
			}
		})
	}
}

func TestStreamReadsOnlyCompleteLines(t *testing.T) {
	l := newFakeLog(t)
	l.append(false)
	torn := eventLine(2)
	l.f.Write(torn[:len(torn)/2])

	s := l.stream(1, false, 8)
	if err := collect(context.Background(), s, 1, 1, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the complete lines: %v, want EOF", err)
	}

	// Once the line is finished it is an event.
	l.f.Write(append(torn[len(torn)/2:], '\n'))
	l.seq = 2
	s2 := l.stream(2, false, 8)
	if err := collect(context.Background(), s2, 2, 2, 0); err != nil {
		t.Fatal(err)
	}
}

func TestStreamWithoutFollowEndsAtLogEnd(t *testing.T) {
	l := newFakeLog(t)
	for range 5 {
		l.append(false)
	}
	tests := []struct {
		from       int64
		first, end int64
	}{
		{0, 1, 5}, {1, 1, 5}, {3, 3, 5}, {5, 5, 5}, {6, 6, 5},
	}
	for _, tc := range tests {
		s := l.stream(tc.from, false, 8)
		if err := collect(context.Background(), s, tc.first, tc.end, 0); err != nil {
			t.Fatalf("from %d: %v", tc.from, err)
		}
		if _, err := s.Next(context.Background()); !errors.Is(err, io.EOF) {
			t.Fatalf("from %d: %v, want EOF", tc.from, err)
		}
	}
}

func TestStreamOfMissingLogWaitsForFirstEvent(t *testing.T) {
	dir := t.TempDir()
	h := &hub{}
	s := newStream(filepath.Join(dir, eventsFile), h, 1, 8, wire.DefaultMaxLine, zaptest.NewLogger(t))
	defer s.Close()
	got := make(chan error, 1)
	go func() {
		ev, err := s.Next(context.Background())
		if err == nil && ev.Seq != 1 {
			err = fmt.Errorf("seq %d", ev.Seq)
		}
		got <- err
	}()
	waitFor(t, func() bool { h.mu.Lock(); defer h.mu.Unlock(); return len(h.subs) == 1 })
	os.WriteFile(filepath.Join(dir, eventsFile), append(eventLine(1), '\n'), 0o600)
	h.publish(Event{Seq: 1, Type: []byte("assistantDelta"), Line: eventLine(1)})
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

func TestStreamEndsWhenHubCloses(t *testing.T) {
	l := newFakeLog(t)
	l.append(false)
	s := l.stream(1, true, 8)
	if err := collect(context.Background(), s, 1, 1, 0); err != nil {
		t.Fatal(err)
	}
	go l.hub.close(wire.Errorf(wire.CodeNotFound, "session deleted"))
	if _, err := s.Next(context.Background()); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("err = %v, want not_found", err)
	}
}

func TestStreamSkipsUnreadableAndOversizedLines(t *testing.T) {
	l := newFakeLog(t)
	l.f.Write([]byte("not json\n{\"seq\":\"x\"}\n\n"))
	l.append(false)
	l.f.Write(append([]byte(`{"seq":99,"pad":"`), make([]byte, 300)...))
	l.f.Write([]byte("\"}\n"))
	l.append(false)
	s := newStream(l.path, nil, 1, 8, 128, zaptest.NewLogger(t))
	defer s.Close()
	if err := collect(context.Background(), s, 1, 2, 0); err != nil {
		t.Fatal(err)
	}
}

// TestStreamFollowsARepairedLog has a runner's repair rename a new log over
// the one a stream is reading: the stream reads on in the new file, without
// a gap or a repeat.
func TestStreamFollowsARepairedLog(t *testing.T) {
	l := newFakeLog(t)
	for i := 0; i < 3; i++ {
		l.append(false)
	}
	l.f.Write([]byte("garbage\n"))
	s := l.stream(1, false, 8)
	ctx := context.Background()
	if err := collect(ctx, s, 1, 3, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Next(ctx); !errors.Is(err, io.EOF) {
		t.Fatalf("Next at the end = %v, want EOF", err)
	}
	// The repaired log: the three events, then the next two.
	repaired := filepath.Join(filepath.Dir(l.path), "repaired")
	var data []byte
	for seq := int64(1); seq <= 5; seq++ {
		data = append(append(data, eventLine(seq)...), '\n')
	}
	if err := os.WriteFile(repaired, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repaired, l.path); err != nil {
		t.Fatal(err)
	}
	if err := collect(ctx, s, 4, 5, 0); err != nil {
		t.Fatal(err)
	}
}
