package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv makes the test binary a child peer (helperProcess).
const helperEnv = "CORRAL_JSONRPC_TEST_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(helperProcess(mode))
	}
	goleak.VerifyTestMain(m)
}

// helperProcess is a child peer speaking newline-delimited JSON-RPC on its
// stdio. mode picks how it misbehaves.
func helperProcess(mode string) int {
	switch mode {
	case "garbage":
		fmt.Fprintln(os.Stdout, strings.Repeat("x", 300))
		time.Sleep(time.Minute)
		return 0
	case "deaf":
		// Never reads its input, and lives on with its output open.
		syscall.Close(0)
		fmt.Fprintln(os.Stdout, `{"jsonrpc":"2.0","method":"ready"}`)
		time.Sleep(time.Minute)
		return 0
	case "stubborn":
		// Ignores the end of its input and SIGTERM.
		signal.Ignore(syscall.SIGTERM)
		fmt.Fprintln(os.Stderr, "stubborn: ignoring SIGTERM")
		fmt.Fprintln(os.Stdout, `{"jsonrpc":"2.0","method":"ready"}`)
		time.Sleep(time.Minute)
		return 0
	}
	exit := make(chan int, 1)
	conn := NewConn(os.Stdin, os.Stdout, Options{Request: func(_ context.Context, method string, params json.RawMessage) (any, error) {
		switch method {
		case "echo":
			return params, nil
		case "die":
			// Dies before answering, saying why on stderr.
			fmt.Fprintln(os.Stderr, "fatal: the model endpoint refused the key")
			os.Exit(3)
		case "orphan":
			// Leaves a grandchild holding the output, then exits.
			cmd := exec.Command("sleep", "60")
			cmd.Stdout = os.Stdout
			if err := cmd.Start(); err != nil {
				return nil, err
			}
			exit <- 0
			return "bye", nil
		}
		return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + method}
	}})
	go func() {
		conn.Serve()
		exit <- 0
	}()
	code := <-exit
	time.Sleep(50 * time.Millisecond) // let the last answer go out
	return code
}

// startHelper starts the test binary as a child peer in mode.
func startHelper(t *testing.T, mode string, opts ChildOptions) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	c, err := StartChild(cmd, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(time.Second) })
	return c
}

// wantExit checks that err is the connection closing because the child
// exited as described, and that it never speaks of a broken pipe.
func wantExit(t *testing.T, err error, code int, signal, stderr string) *ExitError {
	t.Helper()
	var ee *ExitError
	if !errors.Is(err, ErrClosed) || !errors.As(err, &ee) {
		t.Fatalf("err = %v, want ErrClosed with an *ExitError", err)
	}
	if ee.Code != code || ee.Signal != signal {
		t.Fatalf("exit = code %d signal %q (%v), want code %d signal %q", ee.Code, ee.Signal, ee, code, signal)
	}
	if stderr != "" && !strings.Contains(err.Error(), stderr) {
		t.Fatalf("err = %q, want the stderr line %q in it", err, stderr)
	}
	if strings.Contains(err.Error(), "broken pipe") || errors.Is(err, syscall.EPIPE) {
		t.Fatalf("err = %q speaks of a broken pipe", err)
	}
	return ee
}

func TestChildAnswersCalls(t *testing.T) {
	c := startHelper(t, "echo", ChildOptions{})
	var got map[string]int
	if err := c.Conn().Call(context.Background(), "echo", map[string]int{"n": 7}, &got); err != nil || got["n"] != 7 {
		t.Fatalf("echo = %v, %v", got, err)
	}
	c.Stop(5 * time.Second)
	if ee := c.Err(); ee == nil || ee.Code != 0 || ee.ReadErr != nil {
		t.Fatalf("after Stop, Err = %v, want a clean exit", ee)
	}
}

// Done waits for Gone: what Gone does (here, a plain write; in the
// engines, a log line through the test's logger) happens before anyone
// waiting on Done goes on, so -race sees no conflict.
func TestDoneClosesAfterGoneHasReturned(t *testing.T) {
	var how string // written by Gone, read after Done, no lock on purpose
	c := startHelper(t, "echo", ChildOptions{Gone: func(c *Child) {
		time.Sleep(10 * time.Millisecond) // widen the window a wrong order would race in
		how = c.Err().Status()
		c.Stop(0) // Gone may stop its own child without deadlocking
	}})
	_ = c.Conn().Call(context.Background(), "die", nil, nil)
	<-c.Done()
	if how == "" {
		t.Fatal("Done closed before Gone returned")
	}
}

func TestAChildThatDiesFailsTheWaitingCallWithItsExitStatus(t *testing.T) {
	c := startHelper(t, "echo", ChildOptions{})
	err := c.Conn().Call(context.Background(), "die", nil, nil)
	wantExit(t, err, 3, "", "fatal: the model endpoint refused the key")
	<-c.Done()
	if got := c.Err(); got == nil || got.Code != 3 {
		t.Fatalf("Err = %v", got)
	}
}

func TestACallToADeadChildGetsItsExitStatusNotBrokenPipe(t *testing.T) {
	c := startHelper(t, "echo", ChildOptions{})
	_ = c.Conn().Call(context.Background(), "die", nil, nil)
	<-c.Done()
	for _, call := range []func() error{
		func() error { return c.Conn().Call(context.Background(), "echo", nil, nil) },
		func() error { return c.Conn().Notify("hello", nil) },
	} {
		wantExit(t, call(), 3, "", "refused the key")
	}
}

func TestAChildThatStopsReadingIsKilledAndCallsLearnIt(t *testing.T) {
	ready := make(chan struct{})
	c := startHelper(t, "deaf", ChildOptions{
		ExitGrace: 100 * time.Millisecond,
		Conn:      Options{Notify: func(string, json.RawMessage) { close(ready) }},
	})
	<-ready
	// The write fails (nobody reads); the call waits for the child's end,
	// which the Child brings about after the exit grace.
	err := c.Conn().Call(context.Background(), "echo", "x", nil)
	wantExit(t, err, -1, "killed", "")
}

func TestAGrandchildHoldingTheOutputDoesNotHoldUpTheEnd(t *testing.T) {
	c := startHelper(t, "echo", ChildOptions{DrainGrace: 100 * time.Millisecond})
	if err := c.Conn().Call(context.Background(), "orphan", nil, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the Child did not end while a grandchild held its output")
	}
	if ee := c.Err(); ee == nil || ee.Code != 0 || ee.ReadErr != nil {
		t.Fatalf("Err = %v, want a clean exit", ee)
	}
}

func TestABrokenStreamKillsTheChild(t *testing.T) {
	c := startHelper(t, "garbage", ChildOptions{Conn: Options{MaxBody: 100}})
	<-c.Done()
	ee := c.Err()
	if ee == nil || ee.Signal != "killed" || !errors.Is(ee.ReadErr, ErrFrame) {
		t.Fatalf("Err = %v, want the child killed for the frame error", ee)
	}
	err := c.Conn().Call(context.Background(), "echo", nil, nil)
	if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), "output broke off") {
		t.Fatalf("call = %v, want the frame error", err)
	}
}

func TestStopEndsAChildThatIgnoresSIGTERM(t *testing.T) {
	ready := make(chan struct{})
	c := startHelper(t, "stubborn", ChildOptions{
		StopGrace: 100 * time.Millisecond,
		Conn:      Options{Notify: func(string, json.RawMessage) { close(ready) }},
	})
	<-ready
	c.Stop(50 * time.Millisecond)
	ee := c.Err()
	if ee == nil || ee.Signal != "killed" || !strings.Contains(ee.Error(), "ignoring SIGTERM") {
		t.Fatalf("Err = %v, want the child killed, with its stderr", ee)
	}
}

func TestStderrLinesReachTheLogAndTheTail(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	c := startHelper(t, "echo", ChildOptions{StderrLine: func(line []byte) {
		mu.Lock()
		logged = append(logged, string(line))
		mu.Unlock()
	}})
	err := c.Conn().Call(context.Background(), "die", nil, nil)
	wantExit(t, err, 3, "", "refused the key")
	<-c.Done()
	mu.Lock()
	defer mu.Unlock()
	if len(logged) != 1 || logged[0] != "fatal: the model endpoint refused the key" {
		t.Fatalf("logged %q", logged)
	}
}
