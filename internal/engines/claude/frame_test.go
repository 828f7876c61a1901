package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// The transcripts in testdata/transcripts are stdio traffic of Claude Code
// 2.1.328 under the official Agent SDK, recorded against a mock model
// server (stdout.ndjson: what the CLI wrote; stdin.ndjson: what the SDK
// wrote).

func readTranscript(t *testing.T, name, file string) [][]byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "transcripts", name, file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			lines = append(lines, append([]byte(nil), sc.Bytes()...))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestParseEveryRecordedFrame(t *testing.T) {
	for _, name := range []string{"allow", "deny", "interrupt", "interrupt-pending", "401-plain-retries", "401-x-should-retry-false", "resume", "control-misc"} {
		t.Run(name, func(t *testing.T) {
			for i, line := range readTranscript(t, name, "stdout.ndjson") {
				f, err := parseFrame(line)
				if err != nil {
					t.Fatalf("line %d: %v", i+1, err)
				}
				if err := decodeView(f); err != nil {
					t.Errorf("line %d (%s): %v", i+1, f.kind(), err)
				}
			}
		})
	}
}

// decodeView decodes the typed view of a frame the adapter reads.
func decodeView(f *frame) error {
	var err error
	switch f.Type {
	case typeControlRequest:
		_, err = f.controlRequest()
	case typeControlResponse:
		_, err = f.controlReply()
	case typeAssistant:
		_, _, err = f.assistant()
	case typeUser:
		_, _, err = f.user()
	case typeStreamEvent:
		_, err = f.streamEvent()
	case typeSystem:
		_, err = f.system()
	case typeResult:
		_, err = f.result()
	}
	return err
}

func TestRecordedFramesDecode(t *testing.T) {
	frames := map[string]*frame{}
	for _, name := range []string{"allow", "interrupt-pending", "401-plain-retries", "401-x-should-retry-false"} {
		for _, line := range readTranscript(t, name, "stdout.ndjson") {
			f, err := parseFrame(line)
			if err != nil {
				t.Fatal(err)
			}
			key := name + " " + f.kind()
			if _, seen := frames[key]; !seen {
				frames[key] = f
			}
		}
	}
	t.Run("can_use_tool", func(t *testing.T) {
		r, err := frames["allow control_request/can_use_tool"].controlRequest()
		if err != nil || r.ToolName != "Write" || r.ToolUseID != "toolu_01WRITE6d7ab6b0317a4eb8ab913f37" || !bytes.Contains(r.Input, []byte(`"content":"hello nod\n"`)) {
			t.Errorf("can_use_tool = %+v, %v", r, err)
		}
	})
	t.Run("hook_callback", func(t *testing.T) {
		r, err := frames["allow control_request/hook_callback"].controlRequest()
		if err != nil || r.CallbackID != "hook_0" || r.HookInput.HookEventName != "PreToolUse" || r.HookInput.ToolName != "Write" || r.HookInput.ToolUseID == "" {
			t.Errorf("hook_callback = %+v, %v", r, err)
		}
	})
	t.Run("result", func(t *testing.T) {
		r, err := frames["allow result/success"].result()
		if err != nil || r.TotalCostUSD == nil || math.Abs(*r.TotalCostUSD-0.146672) > 1e-9 || *r.Usage.InputTokens != 36143 || r.ModelUsage["claude-opus-5-5"].ContextWindow != 1_000_000 {
			t.Errorf("result = %+v, %v", r, err)
		}
	})
	t.Run("control_cancel_request", func(t *testing.T) {
		f := frames["interrupt-pending control_cancel_request"]
		if f == nil || f.RequestID != "23edb908-f0fe-45d2-8ec3-ab5f5189411e" {
			t.Errorf("cancel = %+v", f)
		}
	})
	t.Run("api_retry", func(t *testing.T) {
		s, err := frames["401-plain-retries system/api_retry"].system()
		if err != nil || !isAuthError(s.ErrorStatus, s.Error) || s.Attempt != 1 || s.MaxRetries != 10 || s.RetryDelayMS != 548 {
			t.Errorf("api_retry = %+v, %v", s, err)
		}
	})
	t.Run("synthetic auth error", func(t *testing.T) {
		a, _, err := frames["401-x-should-retry-false assistant/text"].assistant()
		if err != nil || !a.IsAPIError || !isAuthError(a.APIErrorStatus, a.Error) {
			t.Errorf("assistant = %+v, %v", a, err)
		}
	})
}

func TestParseFrameRejects(t *testing.T) {
	for _, line := range []string{
		"this is not json",
		"[1,2,3]",
		`{"subtype":"init"}`,
		`{"type":""}`,
		`{"type":"result"`,
		"",
		`"a string"`,
	} {
		if f, err := parseFrame([]byte(line)); err == nil {
			t.Errorf("parseFrame(%q) = %+v, want an error", line, f)
		}
	}
}

// replay feeds recorded CLI frames through the adapter's frame handler, as
// if a CLI process had written them, and returns what the adapter wrote.
type replay struct {
	eng    *Engine
	host   *enginetest.Host
	conn   *conn
	turn   *turnState
	out    *lockedBuffer
	cancel context.CancelFunc
}

// lockedBuffer is the adapter's stdin: what it writes to the CLI.
type lockedBuffer struct{ testio.Buffer }

func (l *lockedBuffer) Close() error { return nil }

func (l *lockedBuffer) lines() []string {
	return strings.Split(strings.TrimRight(l.String(), "\n"), "\n")
}

func newReplay(t *testing.T, decide func(context.Context, engine.ToolCall) engine.Verdict) *replay {
	t.Helper()
	host := enginetest.NewHost(decide)
	e := New().(*Engine)
	e.opts = engine.StartOptions{Cwd: t.TempDir()}
	e.host, e.logger = host, zaptest.NewLogger(t)
	e.windows = map[string]int64{}
	e.cost = costLedger{known: true}
	out := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{
		stderr:  proc.NewTail(stderrLines),
		logger:  e.logger,
		handle:  e.handleFrame,
		ctx:     ctx,
		cancel:  cancel,
		pending: map[string]chan controlReply{},
		permits: map[string]context.CancelFunc{},
		done:    make(chan struct{}),
	}
	c.wcond = sync.NewCond(&c.wmu)
	c.io.Add(1)
	go c.writeLoop(out)
	t.Cleanup(func() {
		cancel()
		c.handlers.Wait()
		c.closeStdin()
		c.io.Wait()
	})
	r := &replay{eng: e, host: host, conn: c, out: out, cancel: cancel}
	r.turn = newTurn(c, false)
	e.turn = r.turn
	return r
}

// feed routes frames as the reader goroutine would, waiting for each
// permission answer before the next frame, as the CLI does. The SDK's hook
// callback ids in the recordings become the adapter's.
func (r *replay) feed(t *testing.T, lines [][]byte) {
	t.Helper()
	ids := strings.NewReplacer(`"callback_id":"hook_0"`, `"callback_id":"`+hookPreToolUse+`"`, `"callback_id":"hook_1"`, `"callback_id":"`+hookPostToolUse+`"`)
	for _, line := range lines {
		f, err := parseFrame([]byte(ids.Replace(string(line))))
		if err != nil {
			t.Fatal(err)
		}
		r.conn.route(f)
		r.conn.handlers.Wait()
	}
	r.conn.closeStdin()
	r.conn.io.Wait()
}

func TestReplayAllowTranscript(t *testing.T) {
	r := newReplay(t, nil)
	r.feed(t, readTranscript(t, "allow", "stdout.ndjson"))

	select {
	case <-r.turn.done:
	default:
		t.Fatal("the result did not end the turn")
	}
	res, err := r.eng.finishTurn(r.turn)
	if err != nil || res.Text != "Done." || res.Stopped || math.Abs(res.Usage.CostUSD-0.146672) > 1e-9 || res.Usage.InputTokens != 36143 {
		t.Errorf("finishTurn = %+v, %v", res, err)
	}
	calls := r.host.Calls()
	if len(calls) != 2 || calls[0].Tool != "Write" || calls[0].Edit == nil || string(calls[0].Edit.After) != "hello nod\n" || calls[1].Command != "cat hello.txt" {
		t.Errorf("Permit calls = %+v", calls)
	}
	if n := len(r.host.OfType(event.ToolStarted)); n != 2 {
		t.Errorf("toolStarted events = %d", n)
	}
	var fin []event.ToolFinishedData
	for _, raw := range r.host.OfType(event.ToolFinished) {
		var d event.ToolFinishedData
		_ = json.Unmarshal(raw, &d)
		fin = append(fin, d)
	}
	// The PostToolUse hook reported the commands' own durations.
	if len(fin) != 2 || fin[0].Outcome != "ok" || fin[0].DurationMS != 13 || fin[1].Output != "hello nod" || fin[1].DurationMS != 453 {
		t.Errorf("toolFinished = %+v", fin)
	}
	// What the adapter answered matches what the SDK answered, frame for
	// frame: ask from the PreToolUse hook, allow echoing the input.
	var answers []string
	for _, l := range r.out.lines() {
		var f struct {
			Response struct {
				Response json.RawMessage `json:"response"`
			} `json:"response"`
		}
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatalf("adapter wrote %q: %v", l, err)
		}
		answers = append(answers, string(f.Response.Response))
	}
	want := []string{
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"Corral's permission gate decides every tool call"}}`,
		`{"behavior":"allow","updatedInput":{"file_path":"/home/user/demo/runs/allow/home/user/demo/hello.txt","content":"hello nod\n"},"toolUseID":"toolu_01WRITE6d7ab6b0317a4eb8ab913f37"}`,
		`{}`,
		`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"Corral's permission gate decides every tool call"}}`,
		`{"behavior":"allow","updatedInput":{"command":"cat hello.txt","description":"Show hello.txt"},"toolUseID":"toolu_01BASH01af6592c8864c44be57e550"}`,
		`{}`,
	}
	if strings.Join(answers, "\n") != strings.Join(want, "\n") {
		t.Errorf("answers:\n%s\nwant:\n%s", strings.Join(answers, "\n"), strings.Join(want, "\n"))
	}
}

func TestReplayDenyTranscript(t *testing.T) {
	decide := func(_ context.Context, c engine.ToolCall) engine.Verdict {
		if c.Tool == "Write" {
			return engine.Verdict{Message: "Denied by probe host: Write is not allowed here."}
		}
		return engine.Verdict{Allow: true}
	}
	r := newReplay(t, decide)
	r.feed(t, readTranscript(t, "deny", "stdout.ndjson"))
	var fin []event.ToolFinishedData
	for _, raw := range r.host.OfType(event.ToolFinished) {
		var d event.ToolFinishedData
		_ = json.Unmarshal(raw, &d)
		fin = append(fin, d)
	}
	if len(fin) != 2 || fin[0].Outcome != "denied" || fin[0].Message != "Denied by probe host: Write is not allowed here." ||
		fin[1].Outcome != "error" || fin[1].ExitCode == nil || *fin[1].ExitCode != 1 {
		t.Errorf("toolFinished = %+v", fin)
	}
	if !strings.Contains(strings.Join(r.out.lines(), "\n"), `{"behavior":"deny","message":"Denied by probe host: Write is not allowed here.","toolUseID":"toolu_01WRITE75ed81f28b594297b332fa39"}`) {
		t.Errorf("the adapter's deny differs from the SDK's: %s", r.out.lines())
	}
}

func TestReplayInterruptTranscript(t *testing.T) {
	r := newReplay(t, nil)
	r.turn.stopRequested, r.turn.interruptSent = true, true
	lines := readTranscript(t, "interrupt", "stdout.ndjson")
	// The first turn of the recording: up to its result.
	var first [][]byte
	for _, l := range lines {
		first = append(first, l)
		if bytes.Contains(l, []byte(`"type":"result"`)) {
			break
		}
	}
	r.feed(t, first)
	res, err := r.eng.finishTurn(r.turn)
	if err != nil || !res.Stopped {
		t.Fatalf("finishTurn = %+v, %v; want Stopped", res, err)
	}
	var deltas []string
	for _, raw := range r.host.OfType(event.AssistantDelta) {
		var d event.TextData
		_ = json.Unmarshal(raw, &d)
		deltas = append(deltas, d.Text)
	}
	if strings.Join(deltas, "") != "word0 word1 word2 " {
		t.Errorf("deltas = %q", deltas)
	}
	var u event.UsageData
	usage := r.host.OfType(event.Usage)
	if len(usage) != 1 || json.Unmarshal(usage[0], &u) != nil || u.InputTokens != 11900 || u.Model != "claude-opus-5-5" {
		t.Errorf("usage events = %s", usage)
	}
	var c event.ContextData
	ctxEv := r.host.OfType(event.Context)
	if len(ctxEv) != 1 || json.Unmarshal(ctxEv[0], &c) != nil || c.UsedTokens != 11901 || c.WindowTokens != 1_000_000 {
		t.Errorf("context events = %s", ctxEv)
	}
}

func TestReplayRejectedKey(t *testing.T) {
	r := newReplay(t, nil)
	r.feed(t, readTranscript(t, "401-x-should-retry-false", "stdout.ndjson"))
	_, err := r.eng.finishTurn(r.turn)
	f, ok := err.(*engine.Failure)
	if !ok || f.Code != event.FailSignInExpired {
		t.Fatalf("finishTurn error = %v; want signInExpired", err)
	}
	if n := len(r.host.OfType(event.AssistantText)); n != 0 {
		t.Errorf("the synthetic error message was emitted as assistant text (%d events)", n)
	}
}

// TestEveryWrittenFrameIsOneJSONLine checks the encoder on what can break a
// line: newlines, separators, control bytes, pretty-printed raw input.
func TestEveryWrittenFrameIsOneJSONLine(t *testing.T) {
	nasty := "line1\nline2\r\n\u2028\u2029\x00\x1b[31m\"quoted\" \\ <html>&amp; \xff"
	frames := []outFrame{
		controlRequestOut{Type: typeControlRequest, RequestID: "corral-1", Request: newInitialize()},
		controlRequestOut{Type: typeControlRequest, RequestID: "corral-2", Request: simpleRequest{Subtype: "interrupt"}},
		newUserMessage(nasty),
		successResponse("r1", askEveryTool()),
		successResponse("r2", permissionAllow{Behavior: "allow", UpdatedInput: json.RawMessage("{\n  \"content\": \"a\\nb\",\n  \"x\": [1,\n 2]\n}"), ToolUseID: "t"}),
		successResponse("r3", permissionDeny{Behavior: "deny", Message: nasty, ToolUseID: "t"}),
		successResponse("r4", hookOutput{HookSpecificOutput: hookSpecificOutput{HookEventName: "PostToolUse", AdditionalContext: steerContext([]string{nasty, "second\nsteer"})}}),
		successResponse("r5", struct{}{}),
		errorResponse("r6", nasty),
	}
	for i, f := range frames {
		line, err := encodeFrame(f)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if !bytes.HasSuffix(line, []byte("\n")) || bytes.Count(line, []byte("\n")) != 1 || !json.Valid(line) {
			t.Errorf("frame %d is not one JSON line: %q", i, line)
		}
		var back map[string]any
		if err := json.Unmarshal(line, &back); err != nil || back["type"] != f.frameKind() {
			t.Errorf("frame %d does not decode to its kind: %v", i, err)
		}
	}
	// Raw input that is not JSON is refused rather than written.
	if _, err := encodeFrame(successResponse("r7", permissionAllow{Behavior: "allow", UpdatedInput: json.RawMessage("{not json")})); err == nil {
		t.Error("a frame with invalid raw JSON was encoded")
	}
}

// TestConnWritesWholeLines runs many concurrent senders through one
// writer: every line must arrive whole.
func TestConnWritesWholeLines(t *testing.T) {
	r := newReplay(t, nil)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				if err := r.conn.send(newUserMessage(strings.Repeat("x", i*j*37))); err != nil {
					t.Error(err)
				}
			}
		}(i)
	}
	wg.Wait()
	r.conn.closeStdin()
	r.conn.io.Wait()
	lines := r.out.lines()
	if len(lines) != 1000 {
		t.Fatalf("wrote %d lines, want 1000", len(lines))
	}
	for _, l := range lines {
		if !json.Valid([]byte(l)) {
			t.Fatalf("torn line %.80q", l)
		}
	}
	if err := r.conn.send(newUserMessage("late")); err == nil {
		t.Error("send after close succeeded")
	}
}

var _ io.WriteCloser = (*lockedBuffer)(nil)
