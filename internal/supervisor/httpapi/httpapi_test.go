package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/fakerunner"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) {
	switch {
	case testrunner.IsFault():
		os.Exit(testrunner.Main(os.Args[1:]))
	case os.Getenv(fakerunner.EnvVar) != "":
		// BenchmarkMirrorToSSE's producer.
		os.Exit(fakerunner.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	testenv.PlainShell()
	code := m.Run()
	testrunner.Remove()
	os.Exit(code)
}

// echoScenario is what the fixture's sessions play: each message answered
// with a short text.
const echoScenario = `fallback: {steps: [{say: "echo"}]}`

type fixture struct {
	t        *testing.T
	m        *supervisor.Manager
	srv      *httptest.Server
	scenario string // the script engine's scenario for create
}

// newScriptFixture serves the API of a manager whose runners are the real
// runner, or the fault f in front of it (testrunner.Fault; none when
// empty); tweak changes the API's options.
func newScriptFixture(t *testing.T, f testrunner.Fault, tweak ...func(*Options)) *fixture {
	t.Helper()
	return newScenarioFixture(t, f, echoScenario, tweak...)
}

// newScenarioFixture is newScriptFixture with the sessions that create
// makes playing scenario.
func newScenarioFixture(t *testing.T, f testrunner.Fault, scenario string, tweak ...func(*Options)) *fixture {
	t.Helper()
	cfg := supervisor.Config{StateDir: t.TempDir(), RunnerPath: testrunner.Path(t)}
	if f != "" {
		cfg.Env, cfg.RunnerPath = testrunner.Env(cfg.RunnerPath, f), os.Args[0]
	}
	return serveManager(t, cfg, scenario, tweak...)
}

// serveManager serves the API of a manager on cfg, with its log in the
// test's; create makes sessions playing scenario.
func serveManager(t *testing.T, cfg supervisor.Config, scenario string, tweak ...func(*Options)) *fixture {
	t.Helper()
	ignore := goleak.IgnoreCurrent()
	cfg.Logger = zaptest.NewLogger(t)
	m, err := supervisor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Logger: zaptest.NewLogger(t), KeepAlive: 50 * time.Millisecond}
	for _, f := range tweak {
		f(&opts)
	}
	srv := httptest.NewServer(New(FromManager(m), opts))
	t.Cleanup(func() {
		if err := m.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		srv.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		if err := goleak.Find(ignore); err != nil {
			t.Error(err)
		}
	})
	return &fixture{t: t, m: m, srv: srv, scenario: testrunner.Scenario(t, scenario)}
}

// do sends a request and returns the status and body.
func (f *fixture) do(method, path, body string, hdr ...string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, raw
}

func (f *fixture) create() string {
	f.t.Helper()
	body, _ := json.Marshal(wire.Spec{Engine: "script", Scenario: f.scenario})
	code, raw := f.do("POST", "/v1/sessions", string(body))
	if code != http.StatusCreated {
		f.t.Fatalf("create: %d %s", code, raw)
	}
	var r api.SessionReply
	if err := json.Unmarshal(raw, &r); err != nil || !r.OK || r.Session == nil {
		f.t.Fatalf("create reply %s: %v", raw, err)
	}
	return r.Session.ID
}

func (f *fixture) send(id, text string) {
	f.t.Helper()
	code, raw := f.do("POST", "/v1/sessions/"+id+"/commands", `{"cmd":"send","text":"`+text+`"}`)
	if code != http.StatusOK {
		f.t.Fatalf("send: %d %s", code, raw)
	}
}

// errorOf decodes an error body and checks its shape.
func errorOf(t *testing.T, code int, raw []byte) *api.Error {
	t.Helper()
	var r struct {
		OK    *bool      `json:"ok"`
		Error *api.Error `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil || r.OK == nil || *r.OK || r.Error == nil {
		t.Fatalf("error body %s: want {ok:false,error}", raw)
	}
	if r.Error.StatusCode != code || r.Error.Message == "" || r.Error.Code == "" {
		t.Fatalf("error %+v with HTTP %d", r.Error, code)
	}
	return r.Error
}

func TestBadBodiesAreRejectedClearly(t *testing.T) {
	commands := "/v1/sessions/" + stubID + "/commands"
	tests := []struct {
		name, path, body, says string
	}{
		{"empty create", "/v1/sessions", ``, "empty"},
		{"broken JSON", "/v1/sessions", `{"engine":`, "ends too early"},
		{"syntax error", "/v1/sessions", `{"engine" "x"}`, "not valid JSON"},
		{"wrong type", "/v1/sessions", `{"engine":3}`, `field "engine" must be string`},
		{"unknown field", "/v1/sessions", `{"engine":"script","engien":"x"}`, `unknown field "engien"`},
		{"array", "/v1/sessions", `[1]`, "must be a JSON object"},
		{"two objects", "/v1/sessions", `{"engine":"script"}{}`, "found more"},
		{"empty command", commands, `{}`, "cmd is required"},
		{"command typo", commands, `{"cmd":"send","txt":"hi"}`, `unknown field "txt"`},
		{"huge body", "/v1/sessions", `{"engine":"` + strings.Repeat("x", maxBody) + `"}`, "larger than"},
	}
	checkBadBodies(t, newStubFixture(t), tests)

	// The supervisor's own checks of a spec, through the same edge.
	checkBadBodies(t, newScriptFixture(t, ""), []struct{ name, path, body, says string }{
		{"missing engine", "/v1/sessions", `{"cwd":"/"}`, "engine is required"},
		{"a title of two lines", "/v1/sessions", `{"engine":"script","title":"a\nb"}`, "one line"},
	})
}

// checkBadBodies posts each body and wants a 400 bad_request that says
// what is wrong.
func checkBadBodies(t *testing.T, f *fixture, tests []struct{ name, path, body, says string }) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, raw := f.do("POST", tc.path, tc.body)
			if code != http.StatusBadRequest {
				t.Fatalf("HTTP %d %s, want 400", code, raw)
			}
			e := errorOf(t, code, raw)
			if e.Code != wire.CodeBadRequest || !strings.Contains(e.Message, tc.says) {
				t.Fatalf("error %+v does not say %q", e, tc.says)
			}
		})
	}
}

func TestUnknownIDsAndPathsAre404(t *testing.T) {
	f := newStubFixture(t)
	for _, tc := range []struct{ method, path, body string }{
		{"GET", "/v1/sessions/0123456789ab", ""},
		{"DELETE", "/v1/sessions/0123456789ab", ""},
		{"POST", "/v1/sessions/0123456789ab/commands", `{"cmd":"status"}`},
		{"GET", "/v1/sessions/0123456789ab/events", ""},
		{"GET", "/v1/sessions/..%2F..%2Fetc/events", ""},
		{"GET", "/v1/nothing", ""},
		{"GET", "/", ""},
	} {
		code, raw := f.do(tc.method, tc.path, tc.body)
		if code != http.StatusNotFound || errorOf(t, code, raw).Code != wire.CodeNotFound {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, code, raw)
		}
	}
	code, raw := f.do("PUT", "/v1/sessions", "")
	if code != http.StatusMethodNotAllowed || !strings.Contains(errorOf(t, code, raw).Message, "GET, POST") {
		t.Errorf("PUT /v1/sessions: %d %s", code, raw)
	}
}

func TestSessionLifecycle(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()

	code, raw := f.do("GET", "/v1/sessions", "")
	var list api.SessionsReply
	if code != 200 || json.Unmarshal(raw, &list) != nil || len(list.Sessions) != 1 || list.Sessions[0].ID != id || !list.Sessions[0].Live {
		t.Fatalf("list: %d %s", code, raw)
	}
	f.send(id, "hello")
	evs := readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events", "", "turnEnded")
	checkSSE(t, evs, 1)

	code, raw = f.do("GET", "/v1/sessions/"+id, "")
	var got api.SessionReply
	if code != 200 || json.Unmarshal(raw, &got) != nil || got.Session.Status == nil || got.Session.Status.Turn != 1 {
		t.Fatalf("get: %d %s", code, raw)
	}
	if code, raw := f.do("DELETE", "/v1/sessions/"+id, ""); code != 200 || string(raw) != "{\"ok\":true}\n" {
		t.Fatalf("delete: %d %s", code, raw)
	}
	if code, _ := f.do("GET", "/v1/sessions/"+id, ""); code != 404 {
		t.Fatalf("get after delete: %d", code)
	}
}

func TestCommandRepliesCarryTheRunnersVerdict(t *testing.T) {
	f := newScriptFixture(t, testrunner.CrashOnSend)
	id := f.create()
	code, raw := f.do("POST", "/v1/sessions/"+id+"/commands", `{"cmd":"frobnicate"}`)
	if code != 400 || !strings.Contains(errorOf(t, code, raw).Message, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: %d %s", code, raw)
	}
	code, raw = f.do("POST", "/v1/sessions/"+id+"/commands", `{"cmd":"status"}`)
	var r wire.Reply
	if code != 200 || json.Unmarshal(raw, &r) != nil || !r.OK || len(r.Result) == 0 {
		t.Fatalf("status: %d %s", code, raw)
	}
	code, raw = f.do("POST", "/v1/sessions/"+id+"/commands", `{"cmd":"send","text":"crash"}`)
	e := errorOf(t, code, raw)
	if code != http.StatusBadGateway || e.Code != wire.CodeRunnerCrashed || e.Detail == nil || e.Detail.ExitCode != 3 ||
		!strings.Contains(strings.Join(e.Detail.Stderr, "\n"), "engine exploded") {
		t.Fatalf("crash: %d %s", code, raw)
	}
}

func TestEventsResumeFromAnySeq(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	f.send(id, "one")
	readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events", "", "turnEnded")
	all := readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events?follow=false", "", "")
	if len(all) < 5 {
		t.Fatalf("only %d events", len(all))
	}
	checkSSE(t, all, 1)
	n := int64(len(all))
	tests := []struct {
		name, query, lastID string
		first               int64
	}{
		{"from the start", "", "", 1},
		{"from=0", "from=0", "", 1},
		{"from=3 starts at 3", "from=3", "", 3},
		{"Last-Event-ID 3 starts after it", "", "3", 4},
		{"Last-Event-ID wins over from", "from=1", "2", 3},
		{"past the end", "from=" + strconv.FormatInt(n+1, 10), "", n + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := "follow=false"
			if tc.query != "" {
				q += "&" + tc.query
			}
			evs := readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events?"+q, tc.lastID, "")
			if int64(len(evs)) != n-tc.first+1 {
				t.Fatalf("%d events, want %d", len(evs), n-tc.first+1)
			}
			checkSSE(t, evs, tc.first)
		})
	}
	for _, bad := range []string{"from=-1", "from=x", "follow=perhaps", "format=xml"} {
		code, raw := f.do("GET", "/v1/sessions/"+id+"/events?"+bad, "")
		if code != 400 {
			t.Errorf("%s: %d %s", bad, code, raw)
		}
	}
	if code, raw := f.do("GET", "/v1/sessions/"+id+"/events", "", "Last-Event-ID", "x"); code != 400 {
		t.Errorf("bad Last-Event-ID: %d %s", code, raw)
	}
}

func TestEventsFollowLiveAfterReplay(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	f.send(id, "before")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", f.srv.URL+"/v1/sessions/"+id+"/events?from=2", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != api.MediaSSE {
		t.Fatalf("content type %q", resp.Header.Get("Content-Type"))
	}
	r := newSSEReader(resp.Body)
	turns := 0
	want := int64(2)
	for turns < 4 {
		ev, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.id != want {
			t.Fatalf("got seq %d, want %d", ev.id, want)
		}
		want++
		if ev.event == "turnEnded" {
			turns++
			if turns < 4 {
				f.send(id, fmt.Sprintf("live %d", turns))
			}
		}
	}
}

func TestEventsAsNDJSON(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	f.send(id, "x")
	readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events", "", "turnEnded")
	sse := readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events?follow=false", "", "")
	for _, how := range [][]string{{"?follow=false&format=ndjson"}, {"?follow=false", "Accept", api.MediaNDJSON}} {
		code, raw := f.do("GET", "/v1/sessions/"+id+"/events"+how[0], "", how[1:]...)
		lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
		if code != 200 || len(lines) != len(sse) {
			t.Fatalf("%v: %d, %d lines, want %d", how, code, len(lines), len(sse))
		}
		for i, l := range lines {
			if l != sse[i].data {
				t.Fatalf("line %d = %s, SSE data %s", i, l, sse[i].data)
			}
		}
	}
	// The same lines as the log on disk.
	onDisk, err := os.ReadFile(f.m.SessionDir(id) + "/events.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	code, raw := f.do("GET", "/v1/sessions/"+id+"/events?follow=false&format=ndjson", "")
	if code != 200 || string(raw) != string(onDisk) {
		t.Fatalf("NDJSON differs from events.jsonl:\n%s\n%s", raw, onDisk)
	}
}

func TestEventStreamEndsWithErrorWhenSessionDeleted(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	resp, err := http.Get(f.srv.URL + "/v1/sessions/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := newSSEReader(resp.Body)
	if ev, err := r.next(); err != nil || ev.event != "sessionStarted" {
		t.Fatalf("first event %+v %v", ev, err)
	}
	seq := int64(1)
	// Idle long enough for keep-alive comments, which the reader skips.
	time.Sleep(120 * time.Millisecond)
	if code, raw := f.do("DELETE", "/v1/sessions/"+id, ""); code != 200 {
		t.Fatalf("delete: %d %s", code, raw)
	}
	// The runner's own last events (it stops as the session goes), in
	// order, then the end.
	ev, err := r.next()
	for ; err == nil && ev.event != "streamEnded"; ev, err = r.next() {
		if seq++; ev.id != seq {
			t.Fatalf("event %+v, want seq %d", ev, seq)
		}
	}
	if err != nil || ev.event != "streamEnded" || !strings.Contains(ev.data, `"code":"not_found"`) {
		t.Fatalf("last event %+v %v", ev, err)
	}
	if _, err := r.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the error: %v", err)
	}
	if r.comments == 0 {
		t.Error("no keep-alive comment on an idle stream")
	}
	if r.retry != 1000 {
		t.Errorf("retry %d, want 1000", r.retry)
	}
}

type sseEvent struct {
	id    int64  // the id as a seq (per-session streams)
	rawID string // the id as sent
	event string
	data  string
}

type sseReader struct {
	r        *bufio.Reader
	comments int
	retry    int // the last retry field
}

func newSSEReader(r io.Reader) *sseReader { return &sseReader{r: bufio.NewReader(r)} }

// next parses the next event of an SSE stream, counting comments.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	fields := 0
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "":
			if fields > 0 {
				return ev, nil
			}
		case strings.HasPrefix(line, ":"):
			s.comments++
		default:
			name, value, _ := strings.Cut(line, ":")
			value = strings.TrimPrefix(value, " ")
			fields++
			switch name {
			case "id":
				ev.rawID = value
				ev.id, _ = strconv.ParseInt(value, 10, 64)
			case "retry":
				fields--
				if s.retry, err = strconv.Atoi(value); err != nil {
					return ev, fmt.Errorf("retry %q: %w", value, err)
				}
			case "event":
				ev.event = value
			case "data":
				ev.data = value
			default:
				return ev, fmt.Errorf("unknown SSE field %q", name)
			}
		}
	}
}

// readSSE reads events until one of type stop, or the stream's end.
func readSSE(t *testing.T, url, lastID, stop string) []sseEvent {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, raw)
	}
	r := newSSEReader(resp.Body)
	var out []sseEvent
	for {
		ev, err := r.next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
		if ev.event == stop {
			return out
		}
	}
}

// checkSSE checks ids run from first with no gap, and each event's id and
// type match its data.
func checkSSE(t *testing.T, evs []sseEvent, first int64) {
	t.Helper()
	for i, ev := range evs {
		var e event.Event
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			t.Fatalf("event %d data %q: %v", i, ev.data, err)
		}
		if ev.id != first+int64(i) || e.Seq != ev.id || string(e.Type) != ev.event {
			t.Fatalf("event %d: id %d type %s, data seq %d type %s, want id %d", i, ev.id, ev.event, e.Seq, e.Type, first+int64(i))
		}
	}
}
