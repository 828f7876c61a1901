package claude

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// TestResumeInANewProcess closes the engine after a turn and resumes the
// conversation with a new engine, as a new runner would.
func TestResumeInANewProcess(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		textStep("first", "The secret word is heron."),
		{Name: "second", Text: "It was heron.", Match: &fakemodel.Match{Contains: "The secret word is heron."}},
	}}
	first := newSession(t, sc, sessionOpts{decide: allowAll})
	r1 := first.MustTurn("Pick a secret word.")
	second := reopen(t, first, sc, first.ConvID)
	r2 := second.MustTurn("What was the word?")
	if r2.Text != "It was heron." {
		t.Fatalf("the resumed turn answered %q: its request lacked the history", r2.Text)
	}
	reqs := second.modelRequests()
	last := reqs[len(reqs)-1]
	if !last.ContainsText("Pick a secret word.") {
		t.Error("the resumed request lacks the first user message")
	}
	// total_cost_usd continues from the stored total; each turn reports
	// its own cost, and both turns made one call of the same size.
	if r1.Usage.CostUSD <= 0 || math.Abs(r2.Usage.CostUSD-r1.Usage.CostUSD) > 1e-9 {
		t.Errorf("turn costs = %v then %v; want the same per-turn cost, not a running total", r1.Usage.CostUSD, r2.Usage.CostUSD)
	}
}

// reopen closes s's engine and starts a new one on the same folder, as a
// new runner would, taking up conversation id.
func reopen(t *testing.T, s *session, sc fakemodel.Scenario, id string) *session {
	t.Helper()
	if err := s.eng.Close(); err != nil {
		t.Fatal(err)
	}
	next := newSession(t, sc, sessionOpts{decide: allowAll, resume: id, dir: s.Dir, worktree: s.Cwd, srv: s.Fake})
	if next.ConvID != id {
		t.Errorf("resumed conversation id = %q, want %q", next.ConvID, id)
	}
	return next
}

// TestResumeBeforeTheFirstMessage: a session closed before its
// conversation took a message resumes in a new engine: the CLI stored
// nothing of it, so --resume would find no conversation; the new process
// begins it under the same id.
func TestResumeBeforeTheFirstMessage(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{textStep("first", "Hello.")}}
	first := newSession(t, sc, sessionOpts{decide: allowAll})
	second := reopen(t, first, sc, first.ConvID)
	if res := second.MustTurn("Hi."); res.Text != "Hello." {
		t.Fatalf("turn = %q", res.Text)
	}
	// The conversation is stored under its id now, and resumes as usual.
	if err := second.eng.Close(); err != nil {
		t.Fatal(err)
	}
	if state, _, err := onDisk(configDirFor(first.Dir), first.ConvID); state != diskStored || err != nil {
		t.Fatalf("conversation %s after a turn: %v %v", first.ConvID, state, err)
	}
}

// TestForkResumesInANewEngine: a fork that has taken no message, as the
// runner moves a session to it, continues in a new engine on the same
// folder as a fork of the original: the CLI stores nothing of a fork until
// it takes a message.
func TestForkResumesInANewEngine(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		textStep("first", "Noted: blue."),
		{Name: "in-fork", Text: "The fork remembers blue.", Match: &fakemodel.Match{Contains: "Noted: blue."}},
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	s.MustTurn("Remember blue.")
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	forkID, err := s.eng.Fork(ctx)
	if err != nil {
		t.Fatalf("Fork: %v", describe(err))
	}
	next := reopen(t, s, sc, forkID)
	if res := next.MustTurn("What do you remember?"); res.Text != "The fork remembers blue." {
		t.Fatalf("the fork answered %q: its request lacked the history", res.Text)
	}
}

// TestForkContinuesACopy forks after a turn: the fork has a new id and the
// history, and the original stays stored.
func TestForkContinuesACopy(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{
		textStep("first", "Noted: blue."),
		{Name: "in-fork", Text: "The fork remembers blue.", Match: &fakemodel.Match{Contains: "Noted: blue."}},
	}}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	first := s.MustTurn("Remember blue.")
	oldPid := s.pid()
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	forkID, err := s.eng.Fork(ctx)
	if err != nil {
		t.Fatalf("Fork: %v", describe(err))
	}
	if forkID == s.ConvID || forkID == "" {
		t.Fatalf("fork id = %q, original %q", forkID, s.ConvID)
	}
	if s.pid() == oldPid {
		t.Error("the fork runs in the original process")
	}
	res := s.MustTurn("What do you remember?")
	if res.Text != "The fork remembers blue." {
		t.Fatalf("the fork answered %q: its request lacked the history", res.Text)
	}
	if math.Abs(res.Usage.CostUSD-first.Usage.CostUSD) > 1e-9 {
		t.Errorf("fork turn cost = %v, first turn %v: want the turn's own cost", res.Usage.CostUSD, first.Usage.CostUSD)
	}
	for _, id := range []string{s.ConvID, forkID} {
		matches, _ := filepath.Glob(filepath.Join(configDirFor(s.Dir), "projects", "*", id+".jsonl"))
		if len(matches) != 1 {
			t.Errorf("conversation %s is not stored (%v)", id, matches)
		}
	}
}

// TestJudgeStaysOutOfTheConversation asks a side question; the next turn's
// request must not contain it.
func TestJudgeStaysOutOfTheConversation(t *testing.T) {
	t.Parallel()
	const question = "JUDGE: is the goal met?"
	sc := fakemodel.Scenario{
		Steps: []fakemodel.Step{
			textStep("first", "Working on it."),
			{Name: "judge", Text: "yes", Match: &fakemodel.Match{LastUserContains: question}},
			{Name: "next", Text: "Carrying on.", Match: &fakemodel.Match{LastUserContains: "carry on"}},
		},
	}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	s.MustTurn("Start the work.")
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	answer, usage, err := s.eng.Judge(ctx, question)
	if err != nil {
		t.Fatalf("Judge: %v", describe(err))
	}
	if strings.TrimSpace(answer) != "yes" || usage.CostUSD <= 0 || usage.Estimated {
		t.Errorf("Judge = %q, %+v", answer, usage)
	}
	reqs := s.modelRequests()
	judged := reqs[len(reqs)-1]
	if len(judged.Body) == 0 || !judged.ContainsText("Working on it.") {
		t.Error("the side query did not see the conversation")
	}
	if strings.Contains(string(judged.Body), `"name":"Bash"`) {
		t.Error("the side query was offered tools")
	}
	res := s.MustTurn("carry on")
	if res.Text != "Carrying on." {
		t.Fatalf("next turn = %q", res.Text)
	}
	reqs = s.modelRequests()
	if reqs[len(reqs)-1].ContainsText(question) {
		t.Error("the side question leaked into the conversation")
	}
	stored, _ := filepath.Glob(filepath.Join(configDirFor(s.Dir), "projects", "*", "*.jsonl"))
	if len(stored) != 1 {
		t.Errorf("stored conversations = %v; the side query must not store one", stored)
	}
}

// TestCompactUsesTheCLIsCommand compacts after a turn.
func TestCompactUsesTheCLIsCommand(t *testing.T) {
	t.Parallel()
	sc := fakemodel.Scenario{
		Steps: []fakemodel.Step{
			textStep("first", "A long answer."),
			{Name: "after", Text: "Still going.", Match: &fakemodel.Match{LastUserContains: "next"}},
		},
		// Claude Code's compaction prompt asks for a text-only summary.
		Side: []fakemodel.Step{{
			Name:  "summary",
			Text:  "<analysis>Short.</analysis>\n<summary>Summary: the user asked for a long answer.</summary>",
			Match: &fakemodel.Match{LastUserContains: "Respond with TEXT ONLY"},
		}},
	}
	s := newSession(t, sc, sessionOpts{decide: allowAll})
	s.MustTurn("Answer at length.")
	before := len(s.Host.OfType(event.Usage))
	ctx, cancel := context.WithTimeout(context.Background(), turnTimeout)
	defer cancel()
	if err := s.eng.Compact(ctx); err != nil {
		t.Fatalf("Compact: %v", describe(err))
	}
	if got := len(s.Host.OfType(event.Usage)); got != before+1 {
		t.Errorf("usage events %d -> %d, want one for the compaction", before, got)
	}
	if res := s.MustTurn("next"); res.Text != "Still going." {
		t.Errorf("turn after compaction = %q", res.Text)
	}
	reqs := s.modelRequests()
	if !reqs[len(reqs)-1].ContainsText("Summary: the user asked for a long answer.") {
		t.Error("the turn after compaction does not carry the summary")
	}
}

// TestNoInheritedCredentials starts the CLI from an environment full of
// credentials; only the session's key may reach it.
func TestNoInheritedCredentials(t *testing.T) {
	t.Parallel()
	leaked := map[string]string{
		"ANTHROPIC_API_KEY":       "sk-ant-leaked-from-the-shell",
		"ANTHROPIC_AUTH_TOKEN":    "leaked-auth-token",
		"CLAUDE_CODE_OAUTH_TOKEN": "leaked-oauth-token",
		"AWS_SECRET_ACCESS_KEY":   "leaked-aws-secret",
		"OPENAI_API_KEY":          "leaked-openai",
		"GITHUB_TOKEN":            "leaked-github",
		"SOME_SERVICE_API_KEY":    "leaked-service",
	}
	env := testEnv(t)
	for k, v := range leaked {
		env = append(env, k+"="+v)
	}
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{textStep("hi", "Hello.")}}
	s := newSession(t, sc, sessionOpts{decide: allowAll, env: env})
	raw, err := os.ReadFile(filepath.Join("/proc", itoa(s.pid()), "environ"))
	if err != nil {
		t.Fatal(err)
	}
	childEnv := strings.Split(string(raw), "\x00")
	for _, kv := range childEnv {
		for name, value := range leaked {
			if strings.Contains(kv, value) || strings.HasPrefix(kv, name+"=") {
				t.Errorf("the CLI inherited %q", kv)
			}
		}
		// The key comes on a pipe, never in the environment.
		if strings.Contains(kv, testKey) {
			t.Errorf("the CLI's environment holds the key: %q", kv)
		}
	}
	if !contains(childEnv, envKeyFD+"=3") || !contains(childEnv, envBaseURL+"="+s.URL) || !contains(childEnv, envNonEssental+"=1") {
		t.Errorf("the CLI's environment lacks the key's descriptor, the endpoint or the quiet switch: %q", childEnv)
	}
	if res := s.MustTurn("Hi."); res.Text != "Hello." {
		t.Fatalf("turn = %q", res.Text)
	}
	for _, r := range s.Fake.Requests() {
		if got := r.Headers["x-api-key"]; got != fakemodel.Fingerprint(testKey) {
			t.Errorf("request %d carried x-api-key %q, want the session key's fingerprint", r.Seq, got)
		}
		if a, ok := r.Headers["authorization"]; ok {
			t.Errorf("request %d carried an Authorization header %q", r.Seq, a)
		}
		for _, v := range leaked {
			for name, h := range r.Headers {
				if h == fakemodel.Fingerprint(v) || strings.Contains(h, v) {
					t.Errorf("request %d header %s carries a leaked credential", r.Seq, name)
				}
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestResumeUnknownConversation: the CLI refuses at once; Start says so
// with the CLI's own words.
func TestResumeUnknownConversation(t *testing.T) {
	t.Parallel()
	_, url := startFake(t, fakemodel.Scenario{Steps: []fakemodel.Step{textStep("never", "unreachable")}}, nil)
	e := New()
	defer e.Close()
	_, err := e.Start(context.Background(), engine.StartOptions{
		Dir:           t.TempDir(),
		Cwd:           t.TempDir(),
		ModelEndpoint: url,
		Resume:        "11111111-2222-4333-8444-555555555555",
		Credentials:   map[string]string{CredentialItem: testKey},
		Env:           testEnv(t),
		Config:        map[string]string{locate.KeyEnginesDir: enginesDir(t)},
		Host:          enginetest.NewHost(nil),
	})
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailEngineError || !strings.Contains(strings.Join(f.Stderr, "\n"), "No conversation found") {
		t.Fatalf("Start = %v; want an engineError carrying the CLI's stderr", err)
	}
}
