package supervisor

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// feedSessions and feedEvents are the multiplexed stream benchmark's load:
// 1,000 sessions, each sending feedEvents events a round (a round, 50,000
// events, fits in the ring: a subscriber that keeps up loses nothing).
const (
	feedSessions = 1000
	feedEvents   = 50
)

// mirrorLines returns a session's mirror lines for one round, as a runner
// writes them: assistantDelta events of about 150 bytes.
func mirrorLines(round int) []byte {
	var b []byte
	for i := range feedEvents {
		seq := int64(round*feedEvents + i + 1)
		ev := fmt.Appendf(nil, `{"seq":%d,"ts":"2026-11-30T10:04:05.123456789Z","type":"assistantDelta","data":{"text":"the next few words of a streamed answer "}}`, seq)
		b = wire.AppendMirror(b, seq, ev)
	}
	return b
}

// socketPair returns the two ends of a unix socket, as a subscriber's
// connection to the supervisor.
func socketPair(b *testing.B) (server, client net.Conn) {
	ln, err := net.Listen("unix", filepath.Join(b.TempDir(), "s"))
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		server, _ = ln.Accept()
	}()
	if client, err = net.Dial("unix", ln.Addr().String()); err != nil {
		b.Fatal(err)
	}
	<-done
	b.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// countLines reads a connection and reports every n lines read.
func countLines(conn net.Conn, n int) <-chan int {
	out := make(chan int, 1024)
	go func() {
		defer close(out)
		r := bufio.NewReaderSize(conn, 256<<10)
		got := 0
		for {
			if _, err := r.ReadSlice('\n'); err != nil {
				if err == bufio.ErrBufferFull {
					continue
				}
				return
			}
			if got++; got%n == 0 {
				out <- got
			}
		}
	}()
	return out
}

// BenchmarkFeed measures the multiplexed stream (GET /v1/events) carrying
// 1,000 sessions' events to one subscriber on a unix socket: each session's
// runner output parsed by its own reader (as a runner's mirror lines are),
// fanned into the ring, read by the subscriber's feed, encoded as the HTTP
// handler encodes items (NDJSON) and read by the client, in rounds of
// 50,000 events. "raw" is the floor side by side: the same mirror lines
// copied straight into the socket, nothing parsed, encoded or fanned in.
func BenchmarkFeed(b *testing.B) {
	rounds := make([][]byte, 4)
	for i := range rounds {
		rounds[i] = mirrorLines(i)
	}
	perRound := feedSessions * feedEvents

	b.Run("1000-sessions", func(b *testing.B) {
		m, err := New(Config{StateDir: b.TempDir(), RunnerPath: "/nonexistent/runner", Logger: zap.NewNop()})
		if err != nil {
			b.Fatal(err)
		}
		defer m.Shutdown(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		f, err := m.Feed(ctx, FeedOptions{})
		if err != nil {
			b.Fatal(err)
		}
		server, client := socketPair(b)
		progress := countLines(client, perRound)
		// Each session's runner output, read by its child's reader as
		// long as the benchmark runs.
		outputs := make([]*io.PipeWriter, feedSessions)
		var readers sync.WaitGroup
		for i := range outputs {
			c := &child{log: zap.NewNop(), hooks: childHooks{hub: m.hub, observer: m.cfg.Observer}, session: "s" + strconv.Itoa(i), now: time.Now}
			pr, pw := io.Pipe()
			outputs[i] = pw
			readers.Add(1)
			go func() {
				defer readers.Done()
				c.read(pr, 0)
			}()
		}
		defer func() {
			for _, pw := range outputs {
				pw.Close()
			}
			readers.Wait()
		}()
		var subErr error
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the subscriber's handler
			defer wg.Done()
			w := bufio.NewWriterSize(server, 32<<10)
			var item []byte
			for {
				ev, err := f.Next(ctx)
				if err != nil {
					if ctx.Err() == nil {
						subErr = err
					}
					return
				}
				if ev.Kind == FeedMark {
					subErr = fmt.Errorf("the subscriber was reset: %s", ev.Line)
					return
				}
				item = append(ev.AppendJSON(item[:0]), '\n')
				w.Write(item)
				if !f.Buffered() {
					w.Flush()
				}
			}
		}()
		b.ResetTimer()
		t0, cpu0 := time.Now(), cpuTime()
		for n := range b.N {
			for _, pw := range outputs {
				go pw.Write(rounds[n%len(rounds)])
			}
			if got := <-progress; got != (n+1)*perRound {
				b.Fatalf("round %d: %d items read: %v", n, got, subErr)
			}
		}
		elapsed, cpu := time.Since(t0), cpuTime()-cpu0
		b.StopTimer()
		cancel()
		server.Close()
		wg.Wait()
		b.ReportMetric(float64(b.N*perRound)/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(b.N*perRound)/cpu.Seconds(), "events/cpu-s")
	})

	b.Run("raw", func(b *testing.B) {
		server, client := socketPair(b)
		progress := countLines(client, perRound)
		var all []byte
		for range feedSessions {
			all = append(all, rounds[0]...)
		}
		b.ResetTimer()
		t0, cpu0 := time.Now(), cpuTime()
		for n := range b.N {
			if _, err := io.Copy(server, bytes.NewReader(all)); err != nil {
				b.Fatal(err)
			}
			if got := <-progress; got != (n+1)*perRound {
				b.Fatalf("round %d: %d lines", n, got)
			}
		}
		elapsed, cpu := time.Since(t0), cpuTime()-cpu0
		b.StopTimer()
		b.ReportMetric(float64(b.N*perRound)/elapsed.Seconds(), "events/s")
		b.ReportMetric(float64(b.N*perRound)/cpu.Seconds(), "events/cpu-s")
	})
}

// cpuTime is the CPU time this process has used (user and system): on a
// machine others load, events per CPU-second say what the code costs,
// where events per second also say how much CPU it was given.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
