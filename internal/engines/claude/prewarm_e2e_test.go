package claude

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/pkg/engine"
)

// TestPrewarm runs the engines' prewarm checks against the real CLI: a
// Claude Code process fixes its cwd, so a session in another cwd starts
// cold.
func TestPrewarm(t *testing.T) {
	enginetest.TestPrewarm(t, enginetest.PrewarmConfig{
		NewRig: func(t *testing.T) *enginetest.Rig {
			sc := fakemodel.Scenario{Steps: []fakemodel.Step{textStep("hello", "Warm hello.")}}
			return enginetest.NewRig(t, enginetest.RigConfig{
				New: New, CLI: "claude", Scenario: sc, Credential: CredentialItem, Key: testKey, TurnTimeout: turnTimeout,
			})
		},
		Answer: "Warm hello.",
		PID:    processID,
	})
}

// processID is the engine's CLI process: the warm one, else the session's.
func processID(e engine.Engine) int {
	eng := e.(*Engine)
	eng.mu.Lock()
	defer eng.mu.Unlock()
	switch {
	case eng.warm != nil:
		return eng.warm.conn.pid()
	case eng.conn != nil && eng.conn.alive():
		return eng.conn.pid()
	}
	return 0
}

// TestPrimedProcessStartsItsConversationEmpty checks that what Prewarm
// does to a process ahead of its session (prime) adds nothing to the
// conversation: the session's first model call has the shape of a cold
// session's (the same messages, by role and number of blocks).
func TestPrimedProcessStartsItsConversationEmpty(t *testing.T) {
	cold, warm := firstModelCall(t, false), firstModelCall(t, true)
	if cold != warm {
		t.Fatalf("the first model call of a primed session is %s, of a cold one %s", warm, cold)
	}
}

// firstModelCall runs one turn in a new session, started cold or from a
// prewarmed process, and describes its model call's messages.
func firstModelCall(t *testing.T, prewarm bool) string {
	sc := fakemodel.Scenario{Steps: []fakemodel.Step{textStep("hello", "Warm hello.")}}
	r := enginetest.NewRig(t, enginetest.RigConfig{
		New: New, CLI: "claude", Scenario: sc, Credential: CredentialItem, Key: testKey, TurnTimeout: turnTimeout,
	})
	eng := New().(*Engine)
	t.Cleanup(func() { eng.Close() })
	if prewarm {
		opts := r.Opts
		opts.Host = nil
		if err := eng.Prewarm(t.Context(), opts); err != nil {
			t.Fatal(describe(err))
		}
	}
	id, err := eng.Start(t.Context(), r.Opts)
	if err != nil {
		t.Fatal(describe(err))
	}
	r.Eng, r.ConvID = eng, id
	r.MustTurn("Hello?")
	var calls []fakemodel.Request
	for _, req := range r.Fake.Requests() {
		if req.API == fakemodel.APIAnthropic && strings.HasPrefix(req.Path, "/v1/messages") && !strings.Contains(req.Path, "count_tokens") {
			calls = append(calls, req)
		}
	}
	if len(calls) != 1 {
		t.Fatalf("%d model calls, want 1", len(calls))
	}
	var body struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(calls[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	var shape []string
	for _, m := range body.Messages {
		shape = append(shape, fmt.Sprintf("%s×%d", m.Role, len(m.Content)))
	}
	if !strings.Contains(string(calls[0].Body), "Hello?") {
		t.Fatalf("the model call does not carry the message: %.500s", calls[0].Body)
	}
	return strings.Join(shape, ",")
}
