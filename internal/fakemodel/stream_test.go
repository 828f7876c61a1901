package fakemodel

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"testing"
)

// outcomeOf waits until request seq has finished and returns it.
func outcomeOf(ctx context.Context, t *testing.T, s *Server, seq int) Request {
	t.Helper()
	r, err := s.WaitForRequest(ctx, func(r Request) bool { return r.Seq == seq && r.Outcome != "" })
	if err != nil {
		t.Fatalf("request %d never finished: %v", seq, err)
	}
	return r
}

// handlersDone waits until no handler runs: a held or hanging answer that
// was abandoned must not leave its goroutine behind.
func handlersDone(t *testing.T, s *Server) {
	t.Helper()
	waitFor(t, "handlers to return", func() bool { return s.active.Load() == 0 })
}

func TestCutStreamEndsWithTransportError(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		body     map[string]any
		cutAfter int
	}{
		{"anthropic", "/v1/messages", anthropicBody(true, "x"), 4},
		{"responses", "/v1/responses", responsesBody(true, "x"), 5},
		{"chat", "/v1/chat/completions", chatBody(true, true, "x"), 2},
		{"right after the headers", "/v1/messages", anthropicBody(true, "x"), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			s, url := startServer(t, Scenario{Steps: []Step{{Name: "cut", Text: "one two three four", Chunks: 4, CutAfter: intPtr(tt.cutAfter)}}})
			resp := post(ctx, t, url+tt.path, tt.body, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			events, err := readEvents(resp.Body)
			if !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("read error %v, want unexpected EOF", err)
			}
			if len(events) != tt.cutAfter {
				t.Errorf("got %d events before the cut, want %d", len(events), tt.cutAfter)
			}
			if r := outcomeOf(ctx, t, s, 1); r.Outcome != OutcomeCut || r.Step != "cut" {
				t.Errorf("logged %+v", r)
			}
		})
	}
}

func TestCutNonStreamingSendsNoResponse(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "x", CutAfter: intPtr(0)}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", jsonReader(t, anthropicBody(false, "x")))
	resp, err := http.DefaultClient.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("got a response (%d), want the connection closed", resp.StatusCode)
	}
}

func TestCutAfterMoreEventsThanTheStreamHasCutsAtTheEnd(t *testing.T) {
	ctx := testContext(t)
	_, url := startServer(t, Scenario{Steps: []Step{{Text: "x", CutAfter: intPtr(1000)}}})
	resp := post(ctx, t, url+"/v1/chat/completions", chatBody(true, false, "x"), nil)
	events, err := readEvents(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("read error %v, want unexpected EOF", err)
	}
	if last := events[len(events)-1]; last.Data != "[DONE]" {
		t.Errorf("last event %v, want the whole stream before the cut", last)
	}
}

func TestHangKeepsTheStreamOpenUntilTheClientLeaves(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "a b c", Chunks: 3, HangAfter: intPtr(3)}}})
	clientCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	resp := post(clientCtx, t, url+"/v1/messages", anthropicBody(true, "x"), nil)
	sr := newSSEReader(resp.Body)
	var got []string
	for range 3 {
		ev, err := sr.next()
		if err != nil {
			t.Fatalf("event %d: %v", len(got), err)
		}
		got = append(got, ev.Name)
	}
	if want := []string{"message_start", "ping", "content_block_start"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if r := s.Requests()[0]; r.Outcome != "" {
		t.Fatalf("hanging request already finished: %+v", r)
	}
	cancel()
	if r := outcomeOf(ctx, t, s, 1); r.Outcome != OutcomeClientGone {
		t.Errorf("outcome %q", r.Outcome)
	}
	handlersDone(t, s)
}

func TestHoldStopsTheStreamUntilReleased(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Name: "slow", Text: "first second", Chunks: 2, Hold: true, HoldAfter: 4}}})
	resp := post(ctx, t, url+"/v1/messages", anthropicBody(true, "x"), nil)
	sr := newSSEReader(resp.Body)
	for i := range 4 {
		if _, err := sr.next(); err != nil {
			t.Fatalf("event %d before the hold: %v", i, err)
		}
	}
	if err := s.WaitHeld(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	if r := s.Requests()[0]; r.Outcome != "" {
		t.Fatalf("held request finished: %+v", r)
	}
	if err := s.Release("slow"); err != nil {
		t.Fatal(err)
	}
	var rest []event
	for {
		ev, err := sr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		rest = append(rest, ev)
	}
	if got, want := eventNames(rest), []string{"content_block_delta", "content_block_stop", "message_delta", "message_stop"}; !slices.Equal(got, want) {
		t.Errorf("after release: %v, want %v", got, want)
	}
	if r := outcomeOf(ctx, t, s, 1); r.Outcome != OutcomeCompleted {
		t.Errorf("outcome %q", r.Outcome)
	}
}

func TestHoldAtZeroWithholdsTheResponseHeaders(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Name: "gate", Error: &ErrorReply{Status: 503}, Hold: true}}})
	type result struct {
		resp *http.Response
		err  error
	}
	done := make(chan result, 1)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/responses", jsonReader(t, responsesBody(true, "x")))
	go func() {
		resp, err := http.DefaultClient.Do(req)
		done <- result{resp, err}
	}()
	if err := s.WaitHeld(ctx, "gate"); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		t.Fatalf("response arrived while held: %+v", r)
	default:
	}
	if err := s.Release("gate"); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.resp.Body.Close()
	if r.resp.StatusCode != 503 {
		t.Errorf("status %d", r.resp.StatusCode)
	}
}

func TestReleaseBeforeTheRequestLetsItThrough(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Name: "h", Text: "ok", Hold: true}}})
	if err := s.Release("h"); err != nil {
		t.Fatal(err)
	}
	resp := post(ctx, t, url+"/v1/chat/completions", chatBody(true, false, "x"), nil)
	events, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if r := accumulateChat(t, events); r.Text != "ok" {
		t.Errorf("text %q", r.Text)
	}
}

func TestAbandonedHoldEndsItsHandler(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Name: "h", Text: "never", Hold: true, HoldAfter: 2}}})
	clientCtx, cancel := context.WithCancel(ctx)
	resp := post(clientCtx, t, url+"/v1/responses", responsesBody(true, "x"), nil)
	if err := s.WaitHeld(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	cancel()
	_, _ = io.Copy(io.Discard, resp.Body)
	if r := outcomeOf(ctx, t, s, 1); r.Outcome != OutcomeClientGone {
		t.Errorf("outcome %q", r.Outcome)
	}
	handlersDone(t, s)
}

func TestCloseEndsHeldHangingAndDelayedAnswers(t *testing.T) {
	ctx := testContext(t)
	sc := Scenario{
		Side: []Step{
			{Name: "held", Match: &Match{LastUserContains: "held"}, Text: "x", Hold: true},
			{Name: "hung", Match: &Match{LastUserContains: "hung"}, Text: "x", HangAfter: intPtr(1)},
			{Name: "slow", Match: &Match{LastUserContains: "slow"}, Text: "x", Delay: Duration(maxDelay)},
		},
	}
	s := New(sc)
	defer s.Close()
	url, err := s.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 3)
	for _, prompt := range []string{"held", "hung", "slow"} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/messages", jsonReader(t, anthropicBody(true, prompt)))
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errs <- err
		}()
	}
	if err := s.WaitHeld(ctx, "held"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WaitForRequest(ctx, func(r Request) bool { return r.Seq == 3 }); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	for range 3 {
		<-errs // each client sees its answer end, with or without an error
	}
	for _, r := range s.Requests() {
		if r.Outcome != OutcomeServerClosed {
			t.Errorf("%s: outcome %q, want %q", r.Step, r.Outcome, OutcomeServerClosed)
		}
	}
	if n := s.active.Load(); n != 0 {
		t.Errorf("%d handlers still running after Close", n)
	}
}

func TestDelayIsCutShortByTheClientLeaving(t *testing.T) {
	ctx := testContext(t)
	s, url := startServer(t, Scenario{Steps: []Step{{Text: "x", Delay: Duration(maxDelay)}}})
	clientCtx, cancel := context.WithCancel(ctx)
	go func() {
		_, _ = s.WaitForRequest(ctx, nil)
		cancel()
	}()
	req, _ := http.NewRequestWithContext(clientCtx, http.MethodPost, url+"/v1/messages", jsonReader(t, anthropicBody(true, "x")))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatal("got a response despite a ten-minute delay")
	}
	if r := outcomeOf(ctx, t, s, 1); r.Outcome != OutcomeClientGone {
		t.Errorf("outcome %q", r.Outcome)
	}
	handlersDone(t, s)
}

func TestReleaseAndWaitHeldRefuseUnknownNames(t *testing.T) {
	s := New(Scenario{Steps: []Step{{Name: "plain", Text: "x"}}})
	defer s.Close()
	if err := s.Release("plain"); !errors.Is(err, ErrNoSuchHold) {
		t.Errorf("Release of a step that does not hold: %v", err)
	}
	if err := s.WaitHeld(context.Background(), "nope"); !errors.Is(err, ErrNoSuchHold) {
		t.Errorf("WaitHeld of an unknown step: %v", err)
	}
}
