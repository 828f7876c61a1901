package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestFollowedStreamResumesAfterTheSeqItReturned serves a stream cut in the
// middle of a line, then one that repeats an event: the client asks again
// from the seq after the last whole event and drops the repeat.
func TestFollowedStreamResumesAfterTheSeqItReturned(t *testing.T) {
	var mu sync.Mutex
	var froms []string
	bodies := []string{
		"{\"seq\":1}\n{\"seq\":2}\n{\"seq\":3,\"ty", // cut mid-line
		"{\"seq\":2}\n{\"seq\":3}\n",                // a repeat, then the rest; ends without a reason
		"{\"ok\":false,\"error\":{\"message\":\"session x was deleted\",\"code\":\"not_found\",\"statusCode\":404}}\n",
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n := len(froms)
		froms = append(froms, r.URL.Query().Get("from"))
		mu.Unlock()
		if n >= len(bodies) {
			http.Error(w, "too many requests", http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, bodies[n])
	}))
	defer srv.Close()
	c, err := client.New(client.Options{BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	st, err := c.Events(ctxFor(t), "x", client.EventsOptions{Follow: true, OnReconnect: func(lost error) {
		if lost == nil {
			notes = append(notes, "resumed")
		} else {
			notes = append(notes, "lost")
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var seqs []int64
	for {
		ev, err := st.NextEvent()
		if err != nil {
			if !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("ended with %v, want not_found", err)
			}
			break
		}
		seqs = append(seqs, ev.Seq)
	}
	if fmt.Sprint(seqs) != "[1 2 3]" {
		t.Fatalf("seqs %v, want [1 2 3]", seqs)
	}
	if fmt.Sprint(froms) != "[1 3 4]" {
		t.Fatalf("requests from %v, want [1 3 4]", froms)
	}
	if fmt.Sprint(notes) != "[lost resumed lost resumed]" {
		t.Fatalf("reconnect notes %v", notes)
	}
}

func TestUnfollowedStreamDoesNotReconnect(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests++
		io.WriteString(w, "{\"seq\":1}\n{\"seq\":2,")
	}))
	defer srv.Close()
	c, _ := client.New(client.Options{BaseURL: srv.URL})
	st, err := c.Events(ctxFor(t), "x", client.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Next(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err %v, want unexpected EOF", err)
	}
	if requests != 1 {
		t.Fatalf("%d requests", requests)
	}
}

func TestCloseEndsAWaitingNext(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	defer srv.Close()
	c, _ := client.New(client.Options{BaseURL: srv.URL})
	st, err := c.Events(ctxFor(t), "x", client.EventsOptions{Follow: true})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := st.Next()
		done <- err
	}()
	st.Close()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Next after Close: %v", err)
	}
}

// cutter forwards unix-socket connections to a supervisor and can sever
// every one of them at once, as a network or a proxy may.
type cutter struct {
	ln    net.Listener
	to    string
	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func newCutter(t *testing.T, to string) *cutter {
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "cut.sock"))
	if err != nil {
		t.Fatal(err)
	}
	c := &cutter{ln: ln, to: to}
	c.wg.Add(1)
	go c.accept()
	t.Cleanup(func() {
		ln.Close()
		c.sever()
		c.wg.Wait()
	})
	return c
}

func (c *cutter) accept() {
	defer c.wg.Done()
	for {
		in, err := c.ln.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("unix", c.to)
		if err != nil {
			in.Close()
			continue
		}
		c.mu.Lock()
		c.conns = append(c.conns, in, out)
		c.mu.Unlock()
		c.wg.Add(2)
		go func() { defer c.wg.Done(); io.Copy(out, in); out.Close() }()
		go func() { defer c.wg.Done(); io.Copy(in, out); in.Close() }()
	}
}

func (c *cutter) sever() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, conn := range c.conns {
		conn.Close()
	}
	c.conns = nil
}

// TestFollowedStreamSurvivesACutAndARestart follows a real supervisor's
// session through a connection cut mid-stream and a restart of the
// supervisor: every event arrives once, in order, and the stream says when
// it lost and regained its connection.
func TestFollowedStreamSurvivesACutAndARestart(t *testing.T) {
	sup := testsupervisor.Start(t, testsupervisor.Options{})
	ctx := ctxFor(t)
	s, err := sup.Client.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: sup.Work, Scenario: writeScenario(t, sup.Work)})
	if err != nil {
		t.Fatal(err)
	}
	cut := newCutter(t, sup.Socket)
	via, err := client.New(client.Options{Socket: cut.ln.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	notes := make(chan error, 16)
	st, err := via.Events(ctx, s.ID, client.EventsOptions{Follow: true, OnReconnect: func(lost error) { notes <- lost }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	var got []int64
	readTurnEnd := func() {
		t.Helper()
		for {
			ev, err := st.NextEvent()
			if err != nil {
				t.Fatalf("after seqs %v: %v", got, err)
			}
			got = append(got, ev.Seq)
			if ev.Type == event.TurnEnded {
				return
			}
		}
	}
	send := func(text string) {
		t.Helper()
		if _, err := sup.Client.Command(ctx, s.ID, command.Send{Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	send("one")
	readTurnEnd()

	cut.sever()
	send("two")
	readTurnEnd()
	if lost := <-notes; lost == nil {
		t.Fatal("the cut was not reported")
	}
	if resumed := <-notes; resumed != nil {
		t.Fatalf("after the cut: %v, want a resumption", resumed)
	}

	sup.Restart()
	send("three")
	readTurnEnd()

	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("seqs %v: a gap or a repeat at %d", got, i)
		}
	}
	// Nothing more in the log than what the stream gave.
	all, err := sup.Client.Events(ctx, s.ID, client.EventsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	n := 0
	for {
		if _, err := all.Next(); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != len(got) {
		t.Fatalf("the log holds %d events, the stream gave %d", n, len(got))
	}
}

func writeScenario(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "scenario.json")
	body := `{"fallback": {"steps": [{"say": "heard you"}]}}`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustDecode(t *testing.T, raw []byte, v any) bool {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return true
}
