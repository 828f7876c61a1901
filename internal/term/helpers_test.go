package term

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// As the runner does: the terminals' programs get SIGHUP at its
	// default even when the tests run under nohup.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGHUP)
	goleak.VerifyTestMain(m)
}

// patience bounds how long a test waits for a terminal to do something, so
// a broken hub fails the test instead of hanging it. It is a safety net,
// not a performance goal.
const patience = 30 * time.Second

// recorder is a Sink that keeps everything it is given and checks the Sink
// contract: nothing after the final call, and exactly one final call.
type recorder struct {
	mu         sync.Mutex
	out        bytes.Buffer
	exits      int
	closes     int
	code       int
	signal     string
	closeErr   error
	afterFinal int // calls made after Exit or Closed
	opened     int
	grant      Grant
	unopened   int // calls made before Opened
	changed    chan struct{}
	ended      chan struct{}
}

func newRecorder() *recorder {
	return &recorder{changed: make(chan struct{}, 1), ended: make(chan struct{})}
}

func (r *recorder) Opened(g Grant) {
	r.mu.Lock()
	if r.opened++; r.opened > 1 || r.exits+r.closes+r.out.Len() > 0 {
		r.unopened++
	}
	r.grant = g
	r.mu.Unlock()
}

func (r *recorder) Data(p []byte) error {
	r.mu.Lock()
	r.checkOpenedLocked()
	if r.exits+r.closes > 0 {
		r.afterFinal++
	}
	r.out.Write(p)
	r.mu.Unlock()
	r.poke()
	return nil
}

func (r *recorder) Exit(code int, signal string) {
	r.mu.Lock()
	r.checkOpenedLocked()
	r.exits++
	r.code, r.signal = code, signal
	r.finalLocked()
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) Closed(err error) {
	r.mu.Lock()
	r.checkOpenedLocked()
	r.closes++
	r.closeErr = err
	r.finalLocked()
	r.mu.Unlock()
	r.poke()
}

func (r *recorder) checkOpenedLocked() {
	if r.opened != 1 {
		r.unopened++
	}
}

func (r *recorder) finalLocked() {
	if r.exits+r.closes == 1 {
		close(r.ended)
	} else {
		r.afterFinal++
	}
}

func (r *recorder) poke() {
	select {
	case r.changed <- struct{}{}:
	default:
	}
}

func (r *recorder) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits until the recorded output satisfies ok.
func (r *recorder) waitFor(t *testing.T, what string, ok func(out string) bool) string {
	t.Helper()
	deadline := time.NewTimer(patience)
	defer deadline.Stop()
	for {
		out := r.output()
		if ok(out) {
			return out
		}
		select {
		case <-r.changed:
		case <-r.ended:
			if out := r.output(); ok(out) {
				return out
			}
			t.Fatalf("stream ended before %s; output %q", what, tail(r.output()))
		case <-deadline.C:
			t.Fatalf("no %s within %v; output %q", what, patience, tail(r.output()))
		}
	}
}

func (r *recorder) waitForText(t *testing.T, text string) string {
	t.Helper()
	return r.waitFor(t, "output "+strconv.Quote(text), func(out string) bool { return strings.Contains(out, text) })
}

func (r *recorder) waitEnd(t *testing.T) {
	t.Helper()
	select {
	case <-r.ended:
	case <-time.After(patience):
		t.Fatalf("stream did not end within %v; output %q", patience, tail(r.output()))
	}
}

// checkExit asserts the stream ended with exactly one Exit(code, signal)
// and nothing after it.
func (r *recorder) checkExit(t *testing.T, name string, code int, signal string) {
	t.Helper()
	r.waitEnd(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exits != 1 || r.closes != 0 || r.afterFinal != 0 || r.unopened != 0 {
		t.Errorf("%s: got %d Exit, %d Closed, %d calls after the end, %d out of order with Opened; want Opened, then exactly one Exit",
			name, r.exits, r.closes, r.afterFinal, r.unopened)
	}
	if r.code != code || r.signal != signal {
		t.Errorf("%s: Exit(%d, %q), want Exit(%d, %q)", name, r.code, r.signal, code, signal)
	}
}

// checkClosed asserts the stream ended with exactly one Closed whose error
// matches want (nil for a clean detach).
func (r *recorder) checkClosed(t *testing.T, name string, want error) {
	t.Helper()
	r.waitEnd(t)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exits != 0 || r.closes != 1 || r.afterFinal != 0 || r.unopened != 0 {
		t.Errorf("%s: got %d Exit, %d Closed, %d calls after the end, %d out of order with Opened; want Opened, then exactly one Closed",
			name, r.exits, r.closes, r.afterFinal, r.unopened)
	}
	if want == nil && r.closeErr != nil || want != nil && !errors.Is(r.closeErr, want) {
		t.Errorf("%s: Closed(%v), want Closed(%v)", name, r.closeErr, want)
	}
}

func tail(s string) string {
	const keep = 400
	if len(s) > keep {
		return "…" + s[len(s)-keep:]
	}
	return s
}

// newTestHub returns a hub that is closed, and checked to close cleanly,
// when the test ends.
func newTestHub(t *testing.T, opts HubOptions) *Hub {
	t.Helper()
	h := NewHub(opts)
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("close hub: %v", err)
		}
	})
	return h
}

func attach(t *testing.T, h *Hub, req AttachRequest) (*Client, Grant, *recorder) {
	t.Helper()
	r := newRecorder()
	c, g, err := h.Attach(context.Background(), req, r)
	if err != nil {
		t.Fatalf("attach %s to %s: %v", req.ClientID, req.TermID, err)
	}
	return c, g, r
}

func shell(script string) []string { return []string{"sh", "-c", script} }

func input(t *testing.T, c *Client, s string) {
	t.Helper()
	if err := c.Input([]byte(s)); err != nil {
		t.Fatalf("input %q from %s: %v", s, c.ID(), err)
	}
}
