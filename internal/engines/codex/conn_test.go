package codex

import (
	"bufio"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

type nopWriteCloser struct{}

func (nopWriteCloser) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriteCloser) Close() error                { return nil }

// pipeConn connects a conn to a scripted peer: peer reads what the conn
// writes and writes what the conn reads.
func pipeConn(t *testing.T, handle func(message)) (c *conn, peerIn *bufio.Scanner, peerOut io.WriteCloser, served chan error) {
	t.Helper()
	toPeerR, toPeerW := io.Pipe()
	fromPeerR, fromPeerW := io.Pipe()
	c = newConn(toPeerW, nil)
	served = make(chan error, 1)
	go func() { served <- c.serve(fromPeerR, handle, func([]byte, error) {}) }()
	t.Cleanup(func() {
		fromPeerW.Close()
		toPeerR.Close()
	})
	return c, bufio.NewScanner(toPeerR), fromPeerW, served
}

func TestConnMatchesResponsesToCallsDespiteOverlappingServerIDs(t *testing.T) {
	got := make(chan message, 4)
	c, peerIn, peerOut, _ := pipeConn(t, func(m message) { got <- m })
	type result struct {
		TurnID string `json:"turnId"`
	}
	done := make(chan error, 1)
	var res result
	go func() { done <- c.call(context.Background(), "turn/steer", map[string]string{"threadId": "t"}, &res) }()
	if !peerIn.Scan() {
		t.Fatal("no request written")
	}
	if want := `{"id":0,"method":"turn/steer","params":{"threadId":"t"}}`; peerIn.Text() != want {
		t.Fatalf("request %s, want %s", peerIn.Text(), want)
	}
	// The server's own request 0 arrives before the response to ours.
	io.WriteString(peerOut, `{"method":"item/fileChange/requestApproval","id":0,"params":{}}`+"\n")
	io.WriteString(peerOut, `{"id":0,"result":{"turnId":"turn-1"}}`+"\n")
	if err := <-done; err != nil || res.TurnID != "turn-1" {
		t.Fatalf("call: %v %+v", err, res)
	}
	if m := <-got; m.Kind != kindRequest || m.Method != "item/fileChange/requestApproval" {
		t.Fatalf("handler got %+v", m)
	}
}

func TestConnCallReturnsServerErrors(t *testing.T) {
	c, peerIn, peerOut, _ := pipeConn(t, func(message) {})
	done := make(chan error, 1)
	go func() { done <- c.call(context.Background(), "turn/interrupt", nil, nil) }()
	peerIn.Scan()
	io.WriteString(peerOut, `{"error":{"code":-32600,"message":"no active turn to interrupt"},"id":0}`+"\n")
	err := <-done
	var rerr *rpcError
	if !errors.As(err, &rerr) || rerr.Code != -32600 || !strings.Contains(err.Error(), "turn/interrupt") {
		t.Fatalf("err %v, want the server's error with the method named", err)
	}
}

func TestConnFailsPendingCallsWhenTheServerGoes(t *testing.T) {
	c, peerIn, peerOut, served := pipeConn(t, func(message) {})
	done := make(chan error, 1)
	go func() { done <- c.call(context.Background(), "thread/start", nil, nil) }()
	peerIn.Scan()
	peerOut.Close()
	if err := <-done; !errors.Is(err, errConnClosed) {
		t.Fatalf("pending call: %v, want errConnClosed", err)
	}
	if err := <-served; !errors.Is(err, errConnClosed) {
		t.Fatalf("serve: %v", err)
	}
	if err := c.call(context.Background(), "turn/start", nil, nil); !errors.Is(err, errConnClosed) {
		t.Fatalf("call after close: %v", err)
	}
}

func TestConnCallHonoursContext(t *testing.T) {
	c, peerIn, _, _ := pipeConn(t, func(message) {})
	go func() {
		for peerIn.Scan() {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.call(ctx, "turn/start", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v, want the deadline", err)
	}
	c.mu.Lock()
	n := len(c.pending)
	c.mu.Unlock()
	if n != 0 {
		t.Errorf("%d calls left pending", n)
	}
}

func TestConnRespondsToServerRequests(t *testing.T) {
	c, peerIn, _, _ := pipeConn(t, func(message) {})
	go func() {
		c.respond([]byte("0"), approvalDecision{Decision: "decline"})
		c.respondError([]byte(`"x"`), codeMethodNotFound, "Corral does not handle it")
	}()
	for _, want := range []string{
		`{"id":0,"result":{"decision":"decline"}}`,
		`{"id":"x","error":{"code":-32601,"message":"Corral does not handle it"}}`,
	} {
		if !peerIn.Scan() || peerIn.Text() != want {
			t.Fatalf("wrote %q, want %q", peerIn.Text(), want)
		}
	}
}

func TestConnSkipsUnreadableLines(t *testing.T) {
	got := make(chan message, 1)
	var bad []string
	c := newConn(nopWriteCloser{}, nil)
	err := c.serve(strings.NewReader("garbage\n\n{\"method\":\"turn/started\"}\n"), func(m message) { got <- m }, func(l []byte, _ error) { bad = append(bad, string(l)) })
	if !errors.Is(err, errConnClosed) {
		t.Fatalf("serve: %v", err)
	}
	if len(bad) != 1 || bad[0] != "garbage" {
		t.Errorf("bad lines %q", bad)
	}
	if m := <-got; m.Method != "turn/started" {
		t.Errorf("handled %+v", m)
	}
}
