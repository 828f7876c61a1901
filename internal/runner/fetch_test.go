package runner

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
)

// TestScriptFetch runs the script engine's fetch tool, after its ask is
// allowed, against a page served on loopback.
func TestScriptFetch(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/doc":
			fmt.Fprint(w, "the page's text")
		case "/big":
			w.Write([]byte(strings.Repeat("x", 100<<10)))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	cases := []struct {
		name, url, outcome, output, message string
	}{
		{"page", srv.URL + "/doc", "ok", "the page's text", ""},
		{"clipped at 64 KiB", srv.URL + "/big", "ok", strings.Repeat("x", 64<<10), ""},
		{"not found", srv.URL + "/missing", "error", "404 page not found\n", "404 Not Found"},
		{"https refused", "https" + strings.TrimPrefix(srv.URL, "http") + "/doc", "error", "", "http:// URLs only"},
		{"nothing listening", "http://127.0.0.1:1/doc", "error", "", "connection refused"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newSession(t, fmt.Sprintf("turns:\n  - steps:\n      - tool: fetch\n        url: %q\n", c.url), nil)
			s.do(command.Send{Text: "go"})
			ev, i := s.waitType(0, event.AskOpened)
			a := decode[event.AskOpenedData](t, ev)
			s.do(command.Answer{AskID: a.AskID, Decision: command.DecisionAllow})
			fin, _ := s.waitType(i, event.ToolFinished)
			fd := decode[event.ToolFinishedData](t, fin)
			if fd.Outcome != c.outcome || fd.Output != c.output || !strings.Contains(fd.Message, c.message) {
				t.Fatalf("toolFinished outcome %q, message %q, output %.40q (%d bytes); want %q, %q, %.40q (%d bytes)",
					fd.Outcome, fd.Message, fd.Output, len(fd.Output), c.outcome, c.message, c.output, len(c.output))
			}
			s.waitType(i, event.TurnEnded)
		})
	}
}

// TestScriptFetchStopped stops a turn whose fetch waits on a page that never
// comes: the fetch ends with the turn.
func TestScriptFetchStopped(t *testing.T) {
	hung := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(hung)
		<-r.Context().Done()
	}))
	defer srv.Close()
	s := newSession(t, fmt.Sprintf("turns:\n  - steps:\n      - tool: fetch\n        url: %q\n", srv.URL), nil)
	s.do(command.Send{Text: "go"})
	ev, i := s.waitType(0, event.AskOpened)
	s.do(command.Answer{AskID: decode[event.AskOpenedData](t, ev).AskID, Decision: command.DecisionAllow})
	<-hung
	s.do(command.Stop{})
	fin, _ := s.waitType(i, event.ToolFinished)
	if fd := decode[event.ToolFinishedData](t, fin); fd.Outcome == "ok" {
		t.Fatalf("a stopped fetch finished %+v", fd)
	}
	s.waitType(i, event.Stopped)
}
