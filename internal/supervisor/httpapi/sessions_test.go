package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap/zaptest"
)

// fakeSessions is Sessions in memory: the HTTP layer tested alone. Calls
// are recorded; an error set for a method is what it returns.
type fakeSessions struct {
	sessions map[string]api.Session
	events   map[string][]supervisor.Event
	errs     map[string]error
	calls    []string
	reply    *wire.Reply // Command's answer
}

func newFakeSessions() *fakeSessions {
	return &fakeSessions{sessions: map[string]api.Session{}, events: map[string][]supervisor.Event{}, errs: map[string]error{}}
}

func (f *fakeSessions) call(name string, args ...any) error {
	f.calls = append(f.calls, strings.TrimSpace(name+" "+fmt.Sprintln(args...)))
	return f.errs[name]
}

func (f *fakeSessions) LiveCount() int { return len(f.sessions) }
func (f *fakeSessions) Closing() bool  { return false }

func (f *fakeSessions) Create(ctx context.Context, spec wire.Spec) (api.Session, error) {
	if err := f.call("Create", spec.Engine); err != nil {
		return api.Session{}, err
	}
	spec.ID = fmt.Sprintf("s%d", len(f.sessions)+1)
	s := api.Session{ID: spec.ID, Spec: spec, Live: true}
	f.sessions[s.ID] = s
	return s, nil
}

func (f *fakeSessions) List(ctx context.Context) ([]api.Session, error) {
	if err := f.call("List"); err != nil {
		return nil, err
	}
	var out []api.Session
	for _, s := range f.sessions {
		out = append(out, s)
	}
	return out, nil
}

func (f *fakeSessions) Get(ctx context.Context, id string) (api.Session, error) {
	if err := f.call("Get", id); err != nil {
		return api.Session{}, err
	}
	s, ok := f.sessions[id]
	if !ok {
		return s, wire.Errorf(wire.CodeNotFound, "session %s not found", id)
	}
	return s, nil
}

func (f *fakeSessions) Delete(ctx context.Context, id string) error { return f.call("Delete", id) }

func (f *fakeSessions) Command(ctx context.Context, id string, req command.Request) (*wire.Reply, error) {
	if err := f.call("Command", id, req.Cmd()); err != nil {
		return nil, err
	}
	return f.reply, nil
}

func (f *fakeSessions) Events(ctx context.Context, id string, from int64, follow bool) (EventStream, error) {
	if err := f.call("Events", id, from, follow); err != nil {
		return nil, err
	}
	var evs []supervisor.Event
	for _, ev := range f.events[id] {
		if ev.Seq >= from {
			evs = append(evs, ev)
		}
	}
	return &sliceStream{evs: evs, end: f.errs["Next"]}, nil
}

func (f *fakeSessions) Feed(ctx context.Context, opts supervisor.FeedOptions) (FeedStream, error) {
	return nil, f.call("Feed")
}

func (f *fakeSessions) Wait(ctx context.Context, id string, opts supervisor.WaitOptions) (api.WaitReply, error) {
	if err := f.call("Wait", id, opts.For); err != nil {
		return api.WaitReply{}, err
	}
	return api.WaitReply{OK: true, Met: true, LastSeq: 7}, nil
}

func (f *fakeSessions) WorkspaceStatus(ctx context.Context, id string) (*api.WorkspaceStatus, error) {
	return nil, f.call("WorkspaceStatus", id)
}

func (f *fakeSessions) WorkspaceCommit(ctx context.Context, id, message string) (string, error) {
	return "abc123", f.call("WorkspaceCommit", id, message)
}

func (f *fakeSessions) WorkspaceMerge(ctx context.Context, id string) (*api.MergeResult, error) {
	return nil, f.call("WorkspaceMerge", id)
}

func (f *fakeSessions) Engines(ctx context.Context, opts supervisor.EnginesOptions) (api.EnginesReply, error) {
	return api.EnginesReply{}, f.call("Engines")
}

func (f *fakeSessions) OpenTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, error) {
	return nil, f.call("OpenTerm", id)
}

func (f *fakeSessions) ExportTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, *os.File, error) {
	return nil, nil, f.call("ExportTerm", id)
}

func (f *fakeSessions) UnexportTerm(id, termID, clientID string, scrollback []byte) error { return nil }
func (f *fakeSessions) TermInput(id string, in wire.TermInput) error                      { return nil }
func (f *fakeSessions) TermResize(id string, r wire.TermResize) error                     { return nil }
func (f *fakeSessions) TermAck(id string, a wire.TermAck) error                           { return nil }
func (f *fakeSessions) CloseTerm(id, termID, clientID string) error                       { return nil }
func (f *fakeSessions) RecycleTermData(p []byte)                                          {}
func (f *fakeSessions) TermBuffer(n int) []byte                                           { return make([]byte, n) }

// sliceStream yields a fixed list of events, then end (io.EOF if nil).
type sliceStream struct {
	evs []supervisor.Event
	end error
}

func (s *sliceStream) Next(ctx context.Context) (supervisor.Event, error) {
	if len(s.evs) == 0 {
		if s.end != nil {
			return supervisor.Event{}, s.end
		}
		return supervisor.Event{}, io.EOF
	}
	ev := s.evs[0]
	s.evs = s.evs[1:]
	return ev, nil
}
func (s *sliceStream) Buffered() bool { return len(s.evs) > 0 }
func (s *sliceStream) Close() error   { return nil }

func serveFake(t *testing.T, f *fakeSessions) *fixture {
	srv := httptest.NewServer(New(f, Options{Logger: zaptest.NewLogger(t)}))
	t.Cleanup(srv.Close)
	return &fixture{t: t, srv: srv}
}

func TestHTTPLayerOverAFakeOfSessions(t *testing.T) {
	f := newFakeSessions()
	fx := serveFake(t, f)
	id := fx.create()
	for _, tc := range []struct {
		name         string
		method, path string
		body         string
		err          map[string]error
		reply        *wire.Reply
		status       int
		says         string
		call         string
	}{
		{name: "get", method: "GET", path: "/v1/sessions/" + id, status: 200, says: `"engine":"script"`, call: "Get " + id},
		{name: "a missing session", method: "GET", path: "/v1/sessions/nope", status: 404, says: "session nope not found"},
		{name: "an error from another node keeps its code", method: "DELETE", path: "/v1/sessions/" + id,
			err:    map[string]error{"Delete": fmt.Errorf("on node b: %w", wire.Errorf(wire.CodeConflict, "session is being deleted"))},
			status: 409, says: "on node b: session is being deleted"},
		{name: "a command's refusal has its code's status", method: "POST", path: "/v1/sessions/" + id + "/commands", body: `{"cmd":"answer","askId":"a1","decision":"allow"}`,
			reply: wire.ErrReply(wire.Errorf(wire.CodeNotFound, "no open ask")), status: 404, says: "no open ask", call: "Command " + id + " answer"},
		{name: "a command's answer", method: "POST", path: "/v1/sessions/" + id + "/commands", body: `{"cmd":"send","text":"hi"}`,
			reply: &wire.Reply{OK: true, Result: json.RawMessage(`{"queued":true}`)}, status: 200, says: `"queued":true`},
		{name: "a node that does not answer", method: "POST", path: "/v1/sessions/" + id + "/commands", body: `{"cmd":"status"}`,
			err: map[string]error{"Command": wire.Errorf(wire.CodeUnavailable, "node b does not answer")}, status: 503, says: "node b does not answer"},
		{name: "wait", method: "GET", path: "/v1/sessions/" + id + "/wait?for=turnEnd", status: 200, says: `"lastSeq":7`, call: "Wait " + id + " turnEnd"},
		{name: "a workspace commit goes to Sessions", method: "POST", path: "/v1/sessions/" + id + "/workspace/commit", body: `{"message":"m"}`,
			status: 200, says: "abc123", call: "WorkspaceCommit " + id + " m"},
		{name: "a session without a workspace", method: "GET", path: "/v1/sessions/" + id + "/workspace",
			err: map[string]error{"WorkspaceStatus": wire.Errorf(wire.CodeNotFound, "session has no workspace")}, status: 404, says: "no workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.errs, f.reply, f.calls = tc.err, tc.reply, nil
			if f.errs == nil {
				f.errs = map[string]error{}
			}
			code, raw := fx.do(tc.method, tc.path, tc.body)
			if code != tc.status || !strings.Contains(string(raw), tc.says) {
				t.Fatalf("%s %s: %d %s; want %d saying %q", tc.method, tc.path, code, raw, tc.status, tc.says)
			}
			if code >= 400 {
				errorOf(t, code, raw)
			}
			if tc.call != "" && (len(f.calls) != 1 || f.calls[0] != tc.call) {
				t.Fatalf("calls %q, want %q", f.calls, tc.call)
			}
		})
	}
}

func TestHTTPLayerStreamsAnySessionsEvents(t *testing.T) {
	f := newFakeSessions()
	fx := serveFake(t, f)
	id := fx.create()
	for seq := int64(1); seq <= 3; seq++ {
		line := fmt.Sprintf(`{"seq":%d,"type":"text"}`, seq)
		f.events[id] = append(f.events[id], supervisor.Event{Seq: seq, Type: []byte("text"), Line: []byte(line)})
	}
	f.errs["Next"] = wire.Errorf(wire.CodeUnavailable, "node b left the fleet")
	code, raw := fx.do("GET", "/v1/sessions/"+id+"/events?from=2", "")
	want := "id: 2\nevent: text\ndata: {\"seq\":2,\"type\":\"text\"}\n\nid: 3\n"
	if code != 200 || !strings.Contains(string(raw), want) || !strings.Contains(string(raw), "node b left the fleet") {
		t.Fatalf("events: %d %q", code, raw)
	}
	if f.calls[len(f.calls)-1] != "Events "+id+" 2 true" {
		t.Fatalf("calls %q", f.calls)
	}
}
