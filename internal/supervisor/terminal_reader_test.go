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

	"github.com/corral-dev/corral/internal/client"
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
		took, err = readRaw(script)
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

// readRaw runs the program on a pseudo-terminal and reads its output
// straight from the master, as rawRun does.
func readRaw(script string) (time.Duration, error) {
	cmd := exec.Command("sh", "-c", script)
	master, err := pty.Start(cmd)
	if err != nil {
		return 0, err
	}
	defer master.Close()
	start := time.Now()
	if _, err := master.Write([]byte("go\n")); err != nil {
		return 0, err
	}
	total, _ := io.Copy(io.Discard, master) // ends with EIO once the program is gone
	took := time.Since(start)
	cmd.Wait()
	if total < termBenchBytes {
		return 0, fmt.Errorf("read %d bytes, want %d", total, termBenchBytes)
	}
	return took, nil
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
	total := 0
	for {
		ev, err := t.Next(ctx)
		if err != nil {
			return 0, fmt.Errorf("after %d bytes: %w", total, err)
		}
		total += len(ev.Output)
		if ev.Exit != nil {
			break
		}
	}
	took := time.Since(start)
	if total < termBenchBytes {
		return 0, fmt.Errorf("read %d bytes, want %d", total, termBenchBytes)
	}
	return took, nil
}
