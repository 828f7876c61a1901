package jsonrpc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// The Codex dialect: newline-delimited messages without the "jsonrpc"
// member, unreadable lines skipped, and request ids of the server's own
// overlapping the client's.

// linePeer is a Conn in the Codex dialect with a peer that reads and
// writes raw lines.
func linePeer(t *testing.T, opts Options) (c *Conn, peerIn *bufio.Scanner, peerOut io.WriteCloser, served chan error) {
	t.Helper()
	toPeerR, toPeerW := io.Pipe()
	fromPeerR, fromPeerW := io.Pipe()
	opts.Framing, opts.OmitVersion = Lines, true
	c = NewConn(fromPeerR, toPeerW, opts)
	served = make(chan error, 1)
	go func() { served <- c.Serve() }()
	t.Cleanup(func() {
		fromPeerW.Close()
		toPeerR.Close()
		<-c.Done()
	})
	return c, bufio.NewScanner(toPeerR), fromPeerW, served
}

func TestRepliesAreMatchedDespiteTheServersOverlappingIDs(t *testing.T) {
	got := make(chan string, 4)
	c, peerIn, peerOut, _ := linePeer(t, Options{Request: func(_ context.Context, method string, _ json.RawMessage) (any, error) {
		got <- method
		return map[string]string{"decision": "decline"}, nil
	}})
	type result struct {
		TurnID string `json:"turnId"`
	}
	done := make(chan error, 1)
	var res result
	go func() { done <- c.Call(context.Background(), "turn/steer", map[string]string{"threadId": "t"}, &res) }()
	if !peerIn.Scan() {
		t.Fatal("no request written")
	}
	if want := `{"id":0,"method":"turn/steer","params":{"threadId":"t"}}`; peerIn.Text() != want {
		t.Fatalf("request %s, want %s", peerIn.Text(), want)
	}
	// The server's own request 0 arrives before the reply to ours.
	io.WriteString(peerOut, `{"method":"item/fileChange/requestApproval","id":0,"params":{}}`+"\n")
	io.WriteString(peerOut, `{"id":0,"result":{"turnId":"turn-1"}}`+"\n")
	if err := <-done; err != nil || res.TurnID != "turn-1" {
		t.Fatalf("call: %v %+v", err, res)
	}
	if m := <-got; m != "item/fileChange/requestApproval" {
		t.Fatalf("handler got %s", m)
	}
	if !peerIn.Scan() || peerIn.Text() != `{"id":0,"result":{"decision":"decline"}}` {
		t.Fatalf("answer %s", peerIn.Text())
	}
}

func TestRequestIDsAreEchoedInCanonicalForm(t *testing.T) {
	ids := make(chan string, 2)
	_, peerIn, peerOut, _ := linePeer(t, Options{Request: func(ctx context.Context, _ string, _ json.RawMessage) (any, error) {
		ids <- string(RequestID(ctx))
		return nil, &Error{Code: CodeMethodNotFound, Message: "Corral does not handle it"}
	}})
	io.WriteString(peerOut, `{"id":7.0,"method":"a"}`+"\n")
	io.WriteString(peerOut, `{"id":"x","method":"b"}`+"\n")
	answers := map[string]bool{}
	for range 2 {
		if !peerIn.Scan() {
			t.Fatal("no answer")
		}
		answers[peerIn.Text()] = true
	}
	if a, b := <-ids, <-ids; !(a == "7" && b == `"x"` || a == `"x"` && b == "7") {
		t.Errorf("handlers saw request ids %s and %s", a, b)
	}
	for _, want := range []string{
		`{"id":7,"error":{"code":-32601,"message":"Corral does not handle it"}}`,
		`{"id":"x","error":{"code":-32601,"message":"Corral does not handle it"}}`,
	} {
		if !answers[want] {
			t.Errorf("no answer %s among %v", want, answers)
		}
	}
}

func TestUnreadableLinesAreReportedAndSkipped(t *testing.T) {
	var mu sync.Mutex
	var bad []string
	got := make(chan string, 1)
	c := NewConn(strings.NewReader("garbage\n\n{\"id\":null,\"error\":{\"code\":-32700,\"message\":\"parse error\"}}\n{\"id\":99,\"result\":1}\n{\"method\":\"turn/started\"}\n"), io.Discard, Options{
		OmitVersion: true,
		BadMessage: func(body []byte, err error) {
			mu.Lock()
			bad = append(bad, string(body))
			mu.Unlock()
			if !errors.Is(err, ErrProtocol) {
				t.Errorf("bad message error %v does not match ErrProtocol", err)
			}
		},
		Notify: func(method string, _ json.RawMessage) { got <- method },
	})
	if err := c.Serve(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if len(bad) != 3 || bad[0] != "garbage" {
		t.Errorf("bad lines %q", bad)
	}
	if m := <-got; m != "turn/started" {
		t.Errorf("notified %s", m)
	}
}

func TestAnOversizedLineEndsTheConn(t *testing.T) {
	c := NewConn(strings.NewReader(strings.Repeat("x", 1025)+"\n{}\n"), io.Discard, Options{MaxBody: 1024, BadMessage: func([]byte, error) {}})
	err := c.Serve()
	if !errors.Is(err, ErrFrame) || !strings.Contains(err.Error(), "over 1024 bytes") {
		t.Fatalf("Serve = %v, want the oversized line refused", err)
	}
	if _, err := c.start("late", nil, func(json.RawMessage, error) {}); !errors.Is(err, ErrClosed) || !errors.Is(err, ErrFrame) {
		t.Fatalf("a call after the end = %v, want ErrClosed with the frame error", err)
	}
}

func TestACallThatGivesUpLeavesNothingPending(t *testing.T) {
	c, peerIn, _, _ := linePeer(t, Options{})
	go func() {
		for peerIn.Scan() {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := c.Call(ctx, "turn/start", nil, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("call: %v, want the deadline", err)
	}
	if n := c.Pending(); n != 0 {
		t.Errorf("%d calls left pending", n)
	}
}

func TestAWriteErrorClosesABareConn(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c := NewConn(r, failingWriter{}, Options{})
	go c.Serve()
	err := c.Call(context.Background(), "x", nil, nil)
	if !errors.Is(err, ErrClosed) || !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("call = %v, want ErrClosed with the write error", err)
	}
}

// A request handler that is itself waiting on a call when the stream ends
// does not hold up Serve: the call fails first.
func TestAHandlerWaitingOnACallDoesNotHoldUpTheEnd(t *testing.T) {
	var c *Conn
	entered := make(chan struct{})
	handlerErr := make(chan error, 1)
	c, peerIn, peerOut, served := linePeer(t, Options{Request: func(context.Context, string, json.RawMessage) (any, error) {
		close(entered)
		// A context of its own, as a handler sending feedback has.
		err := c.Call(context.Background(), "turn/steer", nil, nil)
		handlerErr <- err
		return nil, err
	}})
	go func() {
		for peerIn.Scan() {
		}
	}()
	io.WriteString(peerOut, `{"id":1,"method":"approve"}`+"\n")
	<-entered
	peerOut.Close()
	if err := <-served; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if err := <-handlerErr; !errors.Is(err, ErrClosed) {
		t.Fatalf("the handler's call = %v, want ErrClosed", err)
	}
}
