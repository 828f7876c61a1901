package jsonrpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// peer is the far side of a Conn under test: it reads what the Conn sends
// and writes raw frames back.
type peer struct {
	r MessageReader
	w MessageWriter
}

func (p *peer) next(t *testing.T) map[string]any {
	t.Helper()
	body, err := p.r.Read()
	if err != nil {
		t.Fatalf("peer read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("peer got invalid JSON %q: %v", body, err)
	}
	return m
}

func (p *peer) send(t *testing.T, body string) {
	t.Helper()
	if err := p.w.Write([]byte(body)); err != nil {
		t.Fatalf("peer write: %v", err)
	}
}

func osPipe(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// framings are the framings every Conn test runs over.
var framings = []Framing{ContentLength, Lines}

// eachFraming runs f once per framing, as a subtest.
func eachFraming(t *testing.T, f func(t *testing.T, fr Framing)) {
	for _, fr := range framings {
		t.Run(fr.String(), func(t *testing.T) { f(t, fr) })
	}
}

// newPair starts a Conn wired to a peer; cleanup closes the peer's side and
// checks that Serve returned. opts.Framing says the framing (Lines when
// nil).
func newPair(t *testing.T, opts Options) (*Conn, *peer, <-chan error) {
	t.Helper()
	// OS pipes buffer like the CLI's stdio does, so a write does not wait
	// for the other side to read.
	toConnR, toConnW := osPipe(t)
	fromConnR, fromConnW := osPipe(t)
	c := NewConn(toConnR, fromConnW, opts)
	served := make(chan error, 1)
	go func() { served <- c.Serve() }()
	t.Cleanup(func() {
		toConnW.Close()
		fromConnR.Close()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Error("Serve did not return after the peer closed")
		}
	})
	fr := opts.Framing
	if fr == nil {
		fr = Lines
	}
	return c, &peer{r: fr.NewReader(fromConnR, 0), w: fr.NewWriter(toConnW)}, served
}

func TestCallGetsItsResult(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		c, p, _ := newPair(t, Options{Framing: fr})
		type res struct {
			Message string `json:"message"`
		}
		got := make(chan res, 1)
		errs := make(chan error, 1)
		go func() {
			var r res
			errs <- c.Call(context.Background(), "ping", map[string]string{"message": "hi"}, &r)
			got <- r
		}()
		req := p.next(t)
		if req["jsonrpc"] != "2.0" || req["method"] != "ping" || req["id"] != float64(0) {
			t.Fatalf("request = %v", req)
		}
		if params, _ := req["params"].(map[string]any); params["message"] != "hi" {
			t.Fatalf("params = %v", req["params"])
		}
		p.send(t, `{"jsonrpc":"2.0","id":0,"result":{"message":"pong"}}`)
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if r := <-got; r.Message != "pong" {
			t.Fatalf("result = %+v", r)
		}
	})
}

func TestCallReturnsPeerError(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		c, p, _ := newPair(t, Options{Framing: fr})
		errs := make(chan error, 1)
		go func() { errs <- c.Call(context.Background(), "models.list", struct{}{}, nil) }()
		p.next(t)
		p.send(t, `{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"Not authenticated"}}`)
		err := <-errs
		var rpcErr *Error
		if !errors.As(err, &rpcErr) || rpcErr.Code != CodeInternalError || rpcErr.Message != "Not authenticated" {
			t.Fatalf("err = %v, want the peer's error object", err)
		}
		if !strings.Contains(err.Error(), "models.list") {
			t.Fatalf("err = %q, want it to name the method", err)
		}
	})
}

func TestRepliesMatchTheirRequestsOutOfOrder(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		c, p, _ := newPair(t, Options{Framing: fr})
		var wg sync.WaitGroup
		results := make([]string, 2)
		for i, method := range []string{"first", "second"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var s string
				if err := c.Call(context.Background(), method, nil, &s); err != nil {
					t.Error(err)
				}
				results[i] = s
			}()
			req := p.next(t)
			if req["method"] != method {
				t.Fatalf("request %d = %v", i, req)
			}
		}
		p.send(t, `{"jsonrpc":"2.0","id":1,"result":"for second"}`)
		p.send(t, `{"jsonrpc":"2.0","id":0,"result":"for first"}`)
		wg.Wait()
		if results[0] != "for first" || results[1] != "for second" {
			t.Fatalf("results = %q", results)
		}
	})
}

func TestNotificationsArriveInOrderAndRepliesInStreamOrder(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		var mu sync.Mutex
		var seen []string
		record := func(s string) {
			mu.Lock()
			seen = append(seen, s)
			mu.Unlock()
		}
		c, p, _ := newPair(t, Options{Framing: fr, Notify: func(method string, params json.RawMessage) {
			record(method + " " + string(params))
		}})
		replied := make(chan struct{})
		if err := c.Go("session.send", nil, func(json.RawMessage, error) { record("reply"); close(replied) }); err != nil {
			t.Fatal(err)
		}
		p.next(t)
		p.send(t, `{"jsonrpc":"2.0","method":"event","params":1}`)
		p.send(t, `{"jsonrpc":"2.0","id":0,"result":{}}`)
		p.send(t, `{"jsonrpc":"2.0","method":"event","params":2}`)
		// A round trip proves the peer's messages were all dispatched.
		done := make(chan error, 1)
		go func() { done <- c.Call(context.Background(), "sync", nil, nil) }()
		p.next(t)
		p.send(t, `{"jsonrpc":"2.0","id":1,"result":null}`)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		<-replied
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(seen, ", "); got != "event 1, reply, event 2" {
			t.Fatalf("dispatch order = %s", got)
		}
	})
}

func TestUnknownPeerRequestGetsMethodNotFound(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		_, p, _ := newPair(t, Options{Framing: fr})
		p.send(t, `{"jsonrpc":"2.0","id":"srv-7","method":"userInput.request","params":{}}`)
		reply := p.next(t)
		if reply["id"] != "srv-7" {
			t.Fatalf("reply id = %v, want the request's id echoed", reply["id"])
		}
		e, _ := reply["error"].(map[string]any)
		if e["code"] != float64(CodeMethodNotFound) || !strings.Contains(e["message"].(string), "userInput.request") {
			t.Fatalf("reply = %v, want method-not-found naming the method", reply)
		}
	})
}

func TestPeerRequestHandlerAnswers(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		_, p, _ := newPair(t, Options{Framing: fr, Request: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			switch method {
			case "echo":
				return json.RawMessage(params), nil
			case "fail":
				return nil, errors.New("cannot do that")
			}
			return nil, &Error{Code: CodeMethodNotFound, Message: "method not found: " + method}
		}})
		p.send(t, `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"x":[1,2]}}`)
		if r := p.next(t); r["id"] != float64(1) || r["result"].(map[string]any)["x"] == nil {
			t.Fatalf("echo reply = %v", r)
		}
		p.send(t, `{"jsonrpc":"2.0","id":2,"method":"fail"}`)
		r := p.next(t)
		e, _ := r["error"].(map[string]any)
		if e["code"] != float64(CodeInternalError) || e["message"] != "cannot do that" {
			t.Fatalf("fail reply = %v", r)
		}
	})
}

func TestServeStopsOnProtocolErrors(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		tests := []struct {
			name string
			body string
			want string
		}{
			{"not JSON", `{"jsonrpc":`, "not a JSON object"},
			{"JSON array", `[1,2]`, "not a JSON object"},
			{"trailing data", `{"jsonrpc":"2.0","method":"x"} {}`, "data after"},
			{"wrong version", `{"jsonrpc":"1.0","method":"x"}`, `not "2.0"`},
			{"no kind", `{"jsonrpc":"2.0","id":3}`, "neither a request"},
			{"reply to an unknown id", `{"jsonrpc":"2.0","id":42,"result":1}`, "unknown request id 42"},
			{"reply with a string id", `{"jsonrpc":"2.0","id":"x","result":1}`, "not one this side sent"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, p, served := newPair(t, Options{Framing: fr})
				p.send(t, tt.body)
				err := <-served
				if !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("Serve = %v, want a protocol error mentioning %q", err, tt.want)
				}
			})
		}
	})
}

func TestStreamEndFailsWaitingCalls(t *testing.T) {
	toConnR, toConnW := osPipe(t)
	fromConnR, fromConnW := osPipe(t)
	c := NewConn(toConnR, fromConnW, Options{Framing: ContentLength})
	served := make(chan error, 1)
	go func() { served <- c.Serve() }()
	go io.Copy(io.Discard, fromConnR) // drains until the pipe closes
	errs := make(chan error, 1)
	go func() { errs <- c.Call(context.Background(), "session.send", nil, nil) }()
	// Garbage ends the stream with a frame error while the call waits.
	if _, err := toConnW.Write([]byte("Content-Length: 10\r\n\r\n{}")); err != nil {
		t.Fatal(err)
	}
	toConnW.Close()
	err := <-errs
	if !errors.Is(err, ErrClosed) || !errors.Is(err, ErrFrame) {
		t.Fatalf("call err = %v, want closed because of the frame error", err)
	}
	if err := <-served; !errors.Is(err, ErrFrame) {
		t.Fatalf("Serve = %v, want the frame error", err)
	}
	fromConnR.Close()
	if err := c.Call(context.Background(), "late", nil, nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("call after close = %v, want ErrClosed", err)
	}
}

func TestCloseFailsWaitingCallsAndRefusesNewOnes(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		c, p, _ := newPair(t, Options{Framing: fr})
		errs := make(chan error, 1)
		go func() { errs <- c.Call(context.Background(), "session.abort", nil, nil) }()
		p.next(t)
		c.Close()
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting call = %v, want ErrClosed", err)
		}
		if err := c.Notify("x", nil); !errors.Is(err, ErrClosed) {
			t.Fatalf("Notify after Close = %v, want ErrClosed", err)
		}
		// A late reply to the failed call is not a protocol error.
		p.send(t, `{"jsonrpc":"2.0","id":0,"result":{}}`)
	})
}

func TestCallGivesUpWhenContextEnds(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		c, p, _ := newPair(t, Options{Framing: fr})
		ctx, cancel := context.WithCancel(context.Background())
		errs := make(chan error, 1)
		go func() { errs <- c.Call(ctx, "slow", nil, nil) }()
		p.next(t)
		cancel()
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		// The late reply is dropped, and the Conn keeps working.
		p.send(t, `{"jsonrpc":"2.0","id":0,"result":{}}`)
		go func() { errs <- c.Call(context.Background(), "next", nil, nil) }()
		p.next(t)
		p.send(t, `{"jsonrpc":"2.0","id":1,"result":{}}`)
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	})
}

func TestTraceSeesBothDirections(t *testing.T) {
	eachFraming(t, func(t *testing.T, fr Framing) {
		var mu sync.Mutex
		var trace []string
		c, p, _ := newPair(t, Options{Framing: fr, Trace: func(dir Direction, body []byte) {
			mu.Lock()
			trace = append(trace, string(dir)+" "+string(body))
			mu.Unlock()
		}})
		errs := make(chan error, 1)
		go func() { errs <- c.Call(context.Background(), "ping", nil, nil) }()
		p.next(t)
		p.send(t, `{"jsonrpc":"2.0","id":0,"result":1}`)
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		want := []string{`sent {"jsonrpc":"2.0","id":0,"method":"ping"}`, `received {"jsonrpc":"2.0","id":0,"result":1}`}
		if strings.Join(trace, "\n") != strings.Join(want, "\n") {
			t.Fatalf("trace =\n%s\nwant\n%s", strings.Join(trace, "\n"), strings.Join(want, "\n"))
		}
	})
}
