package fleet

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fleettest.StopShared()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goroutines left behind:", err)
			code = 1
		}
	}
	os.Exit(code)
}

var fleetSeq atomic.Int64

// newFleetName returns a fleet name no other test of this process uses, so
// tests on the shared cluster keep apart.
func newFleetName() string {
	return fmt.Sprintf("t%d_%d", os.Getpid()%100000, fleetSeq.Add(1))
}

// testTiming is short enough for tests to see leases expire, and long
// enough that a loaded machine does not lose healthy leases.
func testTiming() Timing {
	return Timing{
		LeaseTTL:   4 * time.Second,
		Renew:      400 * time.Millisecond,
		Margin:     time.Second,
		StopBudget: 500 * time.Millisecond,
		NodeTTL:    4 * time.Second,
		Heartbeat:  400 * time.Millisecond,
		Request:    5 * time.Second,
	}
}

// connect opens a NATS connection to url, closed when the test ends.
func connect(t testing.TB, urls ...string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(strings.Join(urls, ","),
		nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond), nats.ReconnectBufSize(-1),
		nats.PingInterval(time.Second), nats.MaxPingsOutstanding(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func openFabric(t testing.TB, nc *nats.Conn, fleet string) *Fabric {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := Open(ctx, nc, FabricConfig{Fleet: fleet, Timing: testTiming()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func testLogger(t testing.TB) *zap.Logger {
	return zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
}

// memLog is an EventLog in memory: the events of each session, which a
// test appends to while streams follow.
type memLog struct {
	mu     sync.Mutex
	lines  map[string][][]byte
	grown  chan struct{} // closed and replaced on every append
	opened atomic.Int64
}

func newMemLog() *memLog {
	return &memLog{lines: map[string][][]byte{}, grown: make(chan struct{})}
}

// eventLine makes the event line of seq, padded to about size bytes.
func eventLine(seq int64, size int) []byte {
	head := fmt.Sprintf(`{"seq":%d,"type":"text","data":{"text":"`, seq)
	pad := max(0, size-len(head)-4)
	return []byte(head + strings.Repeat(string(rune('a'+seq%26)), pad) + `"}}`)
}

// add appends events up to seq last, each of about size bytes.
func (l *memLog) add(session string, last int64, size int) {
	l.mu.Lock()
	for seq := int64(len(l.lines[session])) + 1; seq <= last; seq++ {
		l.lines[session] = append(l.lines[session], eventLine(seq, size))
	}
	close(l.grown)
	l.grown = make(chan struct{})
	l.mu.Unlock()
}

func (l *memLog) addLine(session string, line []byte) {
	l.mu.Lock()
	l.lines[session] = append(l.lines[session], line)
	close(l.grown)
	l.grown = make(chan struct{})
	l.mu.Unlock()
}

func (l *memLog) all(session string) [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]byte(nil), l.lines[session]...)
}

func (l *memLog) Events(ctx context.Context, session string, from int64, follow bool) (EventStream, error) {
	l.opened.Add(1)
	return &memStream{l: l, session: session, next: max(from, 1), follow: follow}, nil
}

type memStream struct {
	l       *memLog
	session string
	next    int64
	follow  bool
}

func (s *memStream) Next(ctx context.Context) (Event, error) {
	for {
		s.l.mu.Lock()
		lines, grown := s.l.lines[s.session], s.l.grown
		s.l.mu.Unlock()
		if s.next <= int64(len(lines)) {
			line := lines[s.next-1]
			seq, typ, err := wire.ScanEvent(line)
			if err != nil {
				return Event{}, err
			}
			s.next++
			return Event{Seq: seq, Type: typ, Line: line}, nil
		}
		if !s.follow {
			return Event{}, io.EOF
		}
		select {
		case <-grown:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

func (s *memStream) Buffered() bool {
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	return s.next <= int64(len(s.l.lines[s.session]))
}

func (s *memStream) Close() error { return nil }

// readAll reads a stream to its end.
func readAll(t testing.TB, s EventStream) []Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []Event
	for {
		ev, err := s.Next(ctx)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		out = append(out, Event{Seq: ev.Seq, Type: append([]byte(nil), ev.Type...), Line: append([]byte(nil), ev.Line...)})
	}
}

// eventually polls cond every 10ms until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
