package supervisor

// The readers of BenchmarkTermThroughput, each run in a fresh process of its
// own: the test binary started again with termReaderEnv set. A reader in
// the benchmark's own process read a pseudo-terminal a third slower once
// that process had run a supervisor's clients (96 against 70 MB/s), which
// made a baseline read there an unfair one to compare with.

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/client"
	"github.com/creack/pty"
)

// Environment of a reader process: which reader, the program's script,
// and, for a WebSocket client, where to attach.
const (
	termReaderEnv        = "CORRAL_TERM_BENCH_READER" // "raw" or "ws"
	termReaderScriptEnv  = "CORRAL_TERM_BENCH_SCRIPT"
	termReaderStateEnv   = "CORRAL_TERM_BENCH_STATE"
	termReaderSessionEnv = "CORRAL_TERM_BENCH_SESSION"
	termReaderTermEnv    = "CORRAL_TERM_BENCH_TERM"
)

// runTermReader runs a reader process with env and returns the time it
// took from the line that starts the program to the end of its output.
func runTermReader(b *testing.B, env ...string) time.Duration {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("reader %v: %v: %s", env, err, stderr.String())
	}
	d, err := time.ParseDuration(strings.TrimSpace(string(out)))
	if err != nil {
		b.Fatalf("reader %v printed %q: %v", env, out, err)
	}
	return d
}

// termReaderMain is a reader process: it prints how long reading took.
func termReaderMain() int {
	script := os.Getenv(termReaderScriptEnv)
	var took time.Duration
	var err error
	switch kind := os.Getenv(termReaderEnv); kind {
	case "raw":
		took, _, err = readPTY(noStopwatch{}, script, false)
	case "ws":
		took, err = readWebSocket(os.Getenv(termReaderStateEnv), os.Getenv(termReaderSessionEnv), os.Getenv(termReaderTermEnv), script)
	default:
		err = fmt.Errorf("unknown reader %q", kind)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(took)
	return 0
}

// stopwatch is what a run starts and stops around the part it times: the
// benchmark's timer in the benchmark's process, nothing in a reader
// process.
type stopwatch interface {
	StartTimer()
	StopTimer()
}

type noStopwatch struct{}

func (noStopwatch) StartTimer() {}
func (noStopwatch) StopTimer()  {}

// readPTY runs the program (termBenchScript) on a pseudo-terminal and reads
// its output straight from the master, through the runtime's poller when
// poller is set, timing from the line that starts it to the end of its
// output. It also returns the CPU time the program used.
func readPTY(sw stopwatch, script string, poller bool) (took, producer time.Duration, err error) {
	cmd := exec.Command("sh", "-c", script)
	master, err := pty.Start(cmd)
	if err != nil {
		return 0, 0, err
	}
	defer func() { master.Close() }() // the master in use by then
	if poller {
		if master, err = nonBlocking(master); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return 0, 0, err
		}
	}
	start := time.Now()
	sw.StartTimer()
	_, err = master.Write([]byte("go\n"))
	// The read that finds the program gone fails (EIO): the end. A read
	// takes at most 4 KiB, whatever the buffer.
	var total int64
	if err == nil {
		total, _ = io.Copy(io.Discard, master)
	}
	sw.StopTimer()
	took = time.Since(start)
	if err != nil {
		cmd.Process.Kill()
	}
	cmd.Wait()
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("start the program: %w", err)
	case total < termBenchBytes:
		return 0, 0, fmt.Errorf("read %d bytes, want %d", total, termBenchBytes)
	}
	return took, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), nil
}

// readWebSocket runs the program in a terminal of a session of the
// supervisor serving state and reads its output as one WebSocket client.
func readWebSocket(state, session, termID, script string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := client.ForState(state)
	if err != nil {
		return 0, err
	}
	t, err := c.AttachTerminal(ctx, session, client.TermOptions{TermID: termID, Command: []string{"sh", "-c", script}})
	if err != nil {
		return 0, err
	}
	defer t.Close()
	start := time.Now()
	if err := t.Input(ctx, []byte("go\n")); err != nil {
		return 0, err
	}
	total, err := drain(ctx, t)
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("after %d bytes: %w", total, err)
	}
	if total < termBenchBytes {
		return 0, fmt.Errorf("read %d bytes, want %d", total, termBenchBytes)
	}
	return took, nil
}
