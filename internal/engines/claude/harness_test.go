package claude

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// testKey is the API key the end-to-end tests hand the CLI; the fake server
// accepts no other.
const testKey = "sk-ant-corral-test-key"

// turnTimeout bounds one end-to-end turn; a turn against the fake server
// takes about a second.
const turnTimeout = 60 * time.Second

// enginesDir is the project's pinned engine install; a test that needs it
// skips (or, in CI, fails) when it is missing.
func enginesDir(t testing.TB) string { return testenv.NeedEngineCLI(t, "claude") }

// session is one engine under test with everything around it: the shared
// engine rig, and the protocol frames the engine's tap saw.
type session struct {
	*enginetest.Rig
	eng     *Engine
	traffic jsonrpc.Traffic
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
	oldest   bool // the oldest supported CLI instead of the newest
}

// testEnv is a clean environment with a home of its own, so the CLI's Bash
// tool does not snapshot (slowly) the shell setup of whoever runs the tests.
func testEnv(t testing.TB) []string { return enginetest.CleanEnv(t) }

// startFake serves sc on loopback for the test's lifetime; it accepts only
// testKey unless sc says otherwise.
func startFake(t testing.TB, sc fakemodel.Scenario, vars map[string]string) (*fakemodel.Server, string) {
	t.Helper()
	return enginetest.StartFake(t, sc, testKey, vars)
}

// newSession starts the engine against a fake server playing sc.
func newSession(t testing.TB, sc fakemodel.Scenario, o sessionOpts) *session {
	t.Helper()
	s := &session{}
	key := o.key
	if key == "" {
		key = testKey
	}
	if sc.Auth == nil {
		// The server accepts the test key even when the engine is handed
		// another one.
		sc.Auth = &fakemodel.Auth{APIKey: testKey}
	}
	s.Rig = enginetest.NewRig(t, enginetest.RigConfig{
		New:         New,
		CLI:         "claude",
		Oldest:      o.oldest,
		Scenario:    sc,
		Server:      o.srv,
		Decide:      o.decide,
		Credential:  CredentialItem,
		Key:         key,
		Env:         o.env,
		Dir:         o.dir,
		Cwd:         o.worktree,
		TurnTimeout: turnTimeout,
		Prepare:     func(e engine.Engine) { e.(*Engine).tap = s.tap },
	})
	if o.prepare != nil {
		o.prepare(s.Cwd, configDirFor(s.Dir))
	}
	eng, _ := s.Start(o.resume)
	s.eng = eng.(*Engine)
	return s
}

// tap records every protocol frame. CORRAL_TEST_TRACE=1 logs each with its
// time, to see where a slow or stuck test waits.
func (s *session) tap(dir jsonrpc.Direction, line []byte) {
	s.traffic.Record(dir, line)
	if os.Getenv("CORRAL_TEST_TRACE") != "" {
		s.T.Logf("%s %s %s", time.Now().Format("15:04:05.000"), dir, fragment(line))
	}
}

// describe spells out a failure with the CLI's stderr.
func describe(err error) string { return enginetest.Describe(err) }

// modelRequests is the server's log of model calls.
func (s *session) modelRequests() []fakemodel.Request {
	var out []fakemodel.Request
	for _, r := range s.Fake.Requests() {
		if r.API == fakemodel.APIAnthropic && strings.HasPrefix(r.Path, "/v1/messages") && !strings.Contains(r.Path, "count_tokens") {
			out = append(out, r)
		}
	}
	return out
}

// toolFinished decodes the toolFinished events.
func (s *session) toolFinished() []event.ToolFinishedData {
	return enginetest.Events[event.ToolFinishedData](s.T, s.Host, event.ToolFinished)
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
var allowAll = enginetest.AllowAll

func itoa(n int) string { return strconv.Itoa(n) }
