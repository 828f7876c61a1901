package term

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/creack/pty"
)

// benchOutputBytes is how much output one benchmark iteration's program
// writes. Every variant runs the same command, so process start-up weighs
// the same on each, and waits for a line of input so every client is
// attached before the output starts.
const benchOutputBytes = 64 << 20

var benchCommand = shell(fmt.Sprintf("read go; exec head -c %d /dev/zero", benchOutputBytes))

// BenchmarkRawPTY is the baseline: the same program's output read straight
// from a pseudo-terminal with no hub, both as the pty package hands it out
// (a blocking descriptor) and as the hub sets it up (non-blocking, served by
// the runtime's poller).
func BenchmarkRawPTY(b *testing.B) {
	b.Run("blocking", func(b *testing.B) {
		benchmarkRawPTY(b, func(cmd *exec.Cmd) (*os.File, error) { return pty.Start(cmd) })
	})
	b.Run("poller", func(b *testing.B) {
		benchmarkRawPTY(b, func(cmd *exec.Cmd) (*os.File, error) { return startPTY(cmd, DefaultCols, DefaultRows) })
	})
}

func benchmarkRawPTY(b *testing.B, start func(*exec.Cmd) (*os.File, error)) {
	b.SetBytes(benchOutputBytes)
	buf := make([]byte, readBufferBytes)
	for b.Loop() {
		cmd := exec.Command(benchCommand[0], benchCommand[1:]...)
		master, err := start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := master.Write([]byte("\n")); err != nil {
			b.Fatal(err)
		}
		total := 0
		for {
			n, err := master.Read(buf)
			total += n
			if err != nil {
				break
			}
		}
		cmd.Wait()
		master.Close()
		if total < benchOutputBytes {
			b.Fatalf("read %d bytes, want at least %d", total, benchOutputBytes)
		}
	}
}

func BenchmarkHubOneClient(b *testing.B)  { benchmarkHub(b, 1, false) }
func BenchmarkHubTenClients(b *testing.B) { benchmarkHub(b, 10, false) }

// BenchmarkHubOneInlineClient is BenchmarkHubOneClient with a sink that
// takes output on the reader (InlineSink), as the runner's link does.
func BenchmarkHubOneInlineClient(b *testing.B) { benchmarkHub(b, 1, true) }

// countingSink counts what it is given and nothing else.
type countingSink struct {
	bytes  atomic.Int64
	ended  chan struct{}
	failed atomic.Value
}

func (s *countingSink) Opened(Grant)        {}
func (s *countingSink) Data(p []byte) error { s.bytes.Add(int64(len(p))); return nil }
func (s *countingSink) Exit(int, string)    { close(s.ended) }
func (s *countingSink) Closed(err error) {
	s.failed.Store(fmt.Errorf("stream closed: %v", err))
	close(s.ended)
}

// inlineCountingSink counts output it takes on the reader too.
type inlineCountingSink struct{ *countingSink }

func (s inlineCountingSink) TryData(p []byte) (bool, error) { return true, s.Data(p) }

// benchmarkHub measures the program's output rate through the hub with
// clients attached; SetBytes counts the output once, however many clients
// each receive all of it.
func benchmarkHub(b *testing.B, clients int, inline bool) {
	h := NewHub(HubOptions{})
	defer h.Close()
	b.SetBytes(benchOutputBytes)
	iteration := 0
	for b.Loop() {
		iteration++
		termID := fmt.Sprintf("bench-%d", iteration)
		sinks := make([]*countingSink, clients)
		var owner *Client
		for i := range sinks {
			sinks[i] = &countingSink{ended: make(chan struct{})}
			var sink Sink = sinks[i]
			if inline {
				sink = inlineCountingSink{sinks[i]}
			}
			c, _, err := h.Attach(context.Background(), AttachRequest{TermID: termID, ClientID: fmt.Sprint(i),
				Role: RoleOwner, Command: benchCommand}, sink)
			if err != nil {
				b.Fatal(err)
			}
			if i == 0 {
				owner = c
			}
		}
		if err := owner.Input([]byte("\n")); err != nil {
			b.Fatal(err)
		}
		for i, s := range sinks {
			<-s.ended
			if err, _ := s.failed.Load().(error); err != nil {
				b.Fatalf("client %d: %v", i, err)
			}
			if n := s.bytes.Load(); n < benchOutputBytes {
				b.Fatalf("client %d got %d bytes, want at least %d", i, n, benchOutputBytes)
			}
		}
	}
}

// echoSink signals every delivery.
type echoSink struct{ got chan struct{} }

func (echoSink) Opened(Grant)        {}
func (s echoSink) Data([]byte) error { s.got <- struct{}{}; return nil }
func (echoSink) Exit(int, string)    {}
func (echoSink) Closed(error)        {}

// BenchmarkKeystrokeEcho measures a key's round trip through the hub: Input
// to a program that echoes it, back out through a client's Sink. It reports
// the median and 99th percentile next to the mean.
func BenchmarkKeystrokeEcho(b *testing.B) {
	h := NewHub(HubOptions{})
	defer h.Close()
	sink := echoSink{got: make(chan struct{}, 1)}
	c, _, err := h.Attach(context.Background(), AttachRequest{TermID: "echo", ClientID: "owner", Role: RoleOwner,
		Command: shell("stty raw -echo; echo ready; exec cat")}, sink)
	if err != nil {
		b.Fatal(err)
	}
	<-sink.got // "ready": cat is about to read
	var rtts []time.Duration
	for b.Loop() {
		start := time.Now()
		if err := c.Input([]byte("x")); err != nil {
			b.Fatal(err)
		}
		<-sink.got
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	b.ReportMetric(float64(rtts[len(rtts)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(rtts[len(rtts)*99/100].Nanoseconds()), "p99-ns")
}
