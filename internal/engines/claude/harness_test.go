package claude

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// testKey is the API key the end-to-end tests hand the CLI; the fake server
// accepts no other.
const testKey = "sk-ant-corral-test-key"

// turnTimeout bounds one end-to-end turn; a turn against the fake server
// takes about a second.
const turnTimeout = 60 * time.Second

// enginesDir is the project's pinned engine install, found relative to this
// package so the tests run from any checkout.
func enginesDir(t testing.TB) string { return testenv.NeedEngineCLI(t, "claude") }

// session is one engine under test with everything around it.
type session struct {
	t        testing.TB
	eng      *Engine
	host     *enginetest.Host
	srv      *fakemodel.Server
	url      string
	worktree string
	dir      string
	convID   string

	mu     sync.Mutex
	frames []tappedFrame
}

type tappedFrame struct {
	dir  byte
	line []byte
}

// sessionOpts adjust a session before it starts.
type sessionOpts struct {
	decide   func(ctx context.Context, call engine.ToolCall) engine.Verdict
	resume   string
	dir      string // session folder to reuse (resume)
	worktree string // worktree to reuse
	env      []string
	key      string
	srv      *fakemodel.Server // share a server (resume, fork)
	prepare  func(worktree, configDir string)
}

// testEnv is a clean environment with a home of its own, so the CLI's Bash
// tool does not snapshot (slowly) the shell setup of whoever runs the tests.
func testEnv(t testing.TB) []string {
	home := t.TempDir()
	var env []string
	for _, kv := range proc.BaseEnv() {
		if !strings.HasPrefix(kv, "HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "HOME="+home)
}

// startFake serves sc on loopback for the test's lifetime.
func startFake(t testing.TB, sc fakemodel.Scenario, vars map[string]string) (*fakemodel.Server, string) {
	t.Helper()
	if sc.Auth == nil {
		sc.Auth = &fakemodel.Auth{APIKey: testKey}
	}
	srv := fakemodel.New(sc, fakemodel.WithVars(vars))
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fake model server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, url
}

// newSession starts the engine against a fake server playing sc.
func newSession(t testing.TB, sc fakemodel.Scenario, o sessionOpts) *session {
	t.Helper()
	s := &session{t: t, worktree: o.worktree, dir: o.dir}
	if s.worktree == "" {
		s.worktree = t.TempDir()
	}
	if s.dir == "" {
		s.dir = t.TempDir()
	}
	if o.srv != nil {
		s.srv, s.url = o.srv, o.srv.URL()
	} else {
		s.srv, s.url = startFake(t, sc, map[string]string{"cwd": s.worktree})
	}
	if o.prepare != nil {
		o.prepare(s.worktree, configDirFor(s.dir))
	}
	s.host = enginetest.NewHost(o.decide)
	s.eng = New().(*Engine)
	s.eng.tap = func(dir byte, line []byte) {
		s.mu.Lock()
		s.frames = append(s.frames, tappedFrame{dir, append([]byte(nil), line...)})
		s.mu.Unlock()
		// CORRAL_TEST_TRACE=1 logs every frame with its time, to see
		// where a slow or stuck test waits.
		if os.Getenv("CORRAL_TEST_TRACE") != "" {
			t.Logf("%s %c %s", time.Now().Format("15:04:05.000"), dir, fragment(line))
		}
	}
	key := o.key
	if key == "" {
		key = testKey
	}
	env := o.env
	if env == nil {
		env = testEnv(t)
	}
	opts := engine.StartOptions{
		SessionID:     "s-test",
		Dir:           s.dir,
		Cwd:           s.worktree,
		ModelEndpoint: s.url,
		Resume:        o.resume,
		Credentials:   map[string]string{CredentialItem: key},
		Env:           env,
		Config:        map[string]string{locate.KeyEnginesDir: enginesDir(t)},
		Host:          s.host,
		Logger:        zaptest.NewLogger(t),
	}
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	id, err := s.eng.Start(ctx, opts)
	if err != nil {
		t.Fatalf("Start: %v", describe(err))
	}
	s.convID = id
	t.Cleanup(func() { s.eng.Close() })
	return s
}

// turn runs one turn to its end.
func (s *session) turn(text string) (engine.TurnResult, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	return s.eng.Turn(ctx, engine.TurnInput{ID: "m1", Text: text, Kind: "send"})
}

// mustTurn runs a turn that must succeed.
func (s *session) mustTurn(text string) engine.TurnResult {
	s.t.Helper()
	res, err := s.turn(text)
	if err != nil {
		s.t.Fatalf("Turn(%q): %v", text, describe(err))
	}
	return res
}

// describe spells out a failure with the CLI's stderr.
func describe(err error) string {
	if f, ok := err.(*engine.Failure); ok {
		return f.Error() + " [" + string(f.Code) + "]\nstderr:\n" + strings.Join(f.Stderr, "\n")
	}
	return err.Error()
}

// modelRequests is the server's log of model calls.
func (s *session) modelRequests() []fakemodel.Request {
	var out []fakemodel.Request
	for _, r := range s.srv.Requests() {
		if r.API == fakemodel.APIAnthropic && strings.HasPrefix(r.Path, "/v1/messages") && !strings.Contains(r.Path, "count_tokens") {
			out = append(out, r)
		}
	}
	return out
}

// toolFinished decodes the toolFinished events.
func (s *session) toolFinished() []wire.ToolFinishedData {
	var out []wire.ToolFinishedData
	for _, raw := range s.host.OfType(wire.EvToolFinished) {
		var d wire.ToolFinishedData
		if err := json.Unmarshal(raw, &d); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// toolResultFor finds the tool_result the model was sent for a call.
func toolResultFor(r fakemodel.Request, toolID string) (text string, isError bool, ok bool) {
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return "", false, false
	}
	for _, m := range body.Messages {
		var blocks []contentBlock
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b.Type == "tool_result" && b.ToolUseID == toolID {
				return textOf(b.Content), b.IsError, true
			}
		}
	}
	return "", false, false
}

// step helpers build scenario steps for Claude's tools.
func toolStep(name, text string, calls ...fakemodel.ToolCall) fakemodel.Step {
	return fakemodel.Step{Name: name, Text: text, Tools: fakemodel.ToolSet{Anthropic: calls}}
}

func call(id, tool string, input any) fakemodel.ToolCall {
	raw, err := json.Marshal(input)
	if err != nil {
		panic(err)
	}
	return fakemodel.ToolCall{ID: id, Name: tool, Input: raw}
}

func textStep(name, text string) fakemodel.Step {
	return fakemodel.Step{Name: name, Text: text}
}

// allowAll is a gate that allows everything.
func allowAll(context.Context, engine.ToolCall) engine.Verdict { return engine.Verdict{Allow: true} }

func itoa(n int) string { return strconv.Itoa(n) }
