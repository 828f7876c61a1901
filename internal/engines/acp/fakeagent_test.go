package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
)

// The test binary stands in for an ACP agent when fakeAgentEnv names a
// mode: it speaks the protocol over its stdio and plays that mode's
// script, so every path of the engine can be driven without a real agent
// or model.
const fakeAgentEnv = "CORRAL_TEST_FAKE_ACP"

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeAgentEnv); mode != "" {
		os.Exit(runFakeAgent(mode))
	}
	goleak.VerifyTestMain(m)
}

// fakeAgent is the agent side of one fake session.
type fakeAgent struct {
	conn      *jsonrpc.Conn
	mode      string
	cwd       string
	cancelled chan struct{}
}

func runFakeAgent(mode string) int {
	cwd, _ := os.Getwd()
	f := &fakeAgent{mode: mode, cwd: cwd, cancelled: make(chan struct{}, 16)}
	f.conn = jsonrpc.NewConn(os.Stdin, os.Stdout, jsonrpc.Options{
		Notify: func(method string, _ json.RawMessage) {
			if method == mSessionCancel {
				f.cancelled <- struct{}{}
			}
		},
		Request: f.serve,
	})
	f.conn.Serve()
	return 0
}

func (f *fakeAgent) serve(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case mInitialize:
		version := ProtocolVersion
		if f.mode == "version2" {
			version = 2
		}
		return map[string]any{"protocolVersion": version, "agentCapabilities": map[string]any{"loadSession": f.mode != "noload"},
			"agentInfo": map[string]string{"name": "fake-agent", "version": "0.0.1"}}, nil
	case mSessionNew:
		if f.mode == "auth" {
			return nil, &jsonrpc.Error{Code: codeAuthRequired, Message: "Authentication required"}
		}
		return map[string]string{"sessionId": "sess-1"}, nil
	case mSessionLoad:
		// The history comes back as updates before the answer.
		f.chunk("old history")
		return map[string]any{}, nil
	case mSessionPrompt:
		var p promptParams
		json.Unmarshal(params, &p)
		return f.prompt(p.Prompt[0].Text)
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: method}
}

func (f *fakeAgent) update(u map[string]any) {
	f.conn.Notify(nSessionUpdate, map[string]any{"sessionId": "sess-1", "update": u})
}

func (f *fakeAgent) chunk(text string) {
	f.update(map[string]any{"sessionUpdate": uAgentMessage, "content": map[string]string{"type": "text", "text": text}})
}

func (f *fakeAgent) call(method string, params map[string]any, out any) error {
	params["sessionId"] = "sess-1"
	return f.conn.Call(context.Background(), method, params, out)
}

// permit asks for permission for a tool call and reports whether it was
// allowed once.
func (f *fakeAgent) permit(id string) bool {
	var res permissionResult
	err := f.call(rPermission, map[string]any{"toolCall": map[string]any{"toolCallId": id}, "options": []map[string]string{
		{"optionId": "always", "name": "Always", "kind": "allow_always"},
		{"optionId": "once", "name": "Allow", "kind": "allow_once"},
		{"optionId": "no", "name": "Reject", "kind": "reject_once"},
	}}, &res)
	return err == nil && res.Outcome.OptionID == "once"
}

func (f *fakeAgent) toolCall(id, kind, title string, input map[string]any) {
	f.update(map[string]any{"sessionUpdate": uToolCall, "toolCallId": id, "kind": kind, "title": title, "rawInput": input, "status": "pending",
		"_meta": map[string]any{"claudeCode": map[string]string{"toolName": "Fake" + kind}}})
}

func (f *fakeAgent) toolDone(id, status, text string) {
	f.update(map[string]any{"sessionUpdate": uToolUpdate, "toolCallId": id, "status": status,
		"content": []map[string]any{{"type": "content", "content": map[string]string{"type": "text", "text": text}}}})
}

// run runs a command in a terminal and returns its output.
func (f *fakeAgent) run(command string) (string, error) {
	var created createTerminalResult
	if err := f.call(rTerminalCreate, map[string]any{"command": command}, &created); err != nil {
		return "", err
	}
	if err := f.call(rTerminalWait, map[string]any{"terminalId": created.TerminalID}, nil); err != nil {
		return "", err
	}
	var out terminalOutputResult
	if err := f.call(rTerminalOutput, map[string]any{"terminalId": created.TerminalID}, &out); err != nil {
		return "", err
	}
	f.call(rTerminalFree, map[string]any{"terminalId": created.TerminalID}, nil)
	return fmt.Sprintf("exit %d: %s", *out.ExitStatus.ExitCode, out.Output), nil
}

func (f *fakeAgent) waitCancel() bool {
	select {
	case <-f.cancelled:
		return true
	case <-time.After(30 * time.Second):
		return false
	}
}

func (f *fakeAgent) prompt(text string) (any, error) {
	hello := filepath.Join(f.cwd, "hello.txt")
	switch f.mode {
	case "work":
		f.chunk("Let me ")
		f.chunk("work.")
		f.update(map[string]any{"sessionUpdate": uUsage, "used": 50000, "size": 200000, "cost": map[string]any{"amount": 0.01, "currency": "USD"}})
		f.update(map[string]any{"sessionUpdate": uPlan, "entries": []map[string]string{
			{"content": "say hi", "priority": "high", "status": "in_progress"}, {"content": "write hello.txt", "priority": "high", "status": "pending"}}})
		f.toolCall("t1", "execute", "`echo hi`", map[string]any{})
		f.toolCall("t1", "execute", "`echo hi`", map[string]any{"command": "echo hi"})
		if f.permit("t1") {
			out, err := f.run("echo hi")
			if err != nil {
				f.toolDone("t1", "failed", err.Error())
			} else {
				f.toolDone("t1", "completed", out)
			}
		} else {
			f.toolDone("t1", "failed", "refused")
		}
		f.toolCall("t2", "edit", "Write hello.txt", map[string]any{"file_path": hello, "content": "hello\n"})
		if f.permit("t2") {
			if err := f.call(rWriteTextFile, map[string]any{"path": hello, "content": "hello\n"}, nil); err != nil {
				f.toolDone("t2", "failed", "Writing file failed: "+err.Error())
			} else {
				f.toolDone("t2", "completed", "written")
			}
		} else {
			f.toolDone("t2", "failed", "refused")
		}
		var read readTextFileResult
		if err := f.call(rReadTextFile, map[string]any{"path": hello}, &read); err != nil {
			f.chunk("The read failed: " + err.Error())
		} else {
			f.chunk(fmt.Sprintf("The file holds %q. ", read.Content))
		}
		f.update(map[string]any{"sessionUpdate": uUsage, "used": 60000, "size": 200000, "cost": map[string]any{"amount": 0.03, "currency": "USD"}})
		f.chunk("Done.")
		return map[string]any{"stopReason": stopEndTurn, "usage": map[string]any{"inputTokens": 1200, "outputTokens": 30, "totalTokens": 1230}}, nil
	case "direct":
		// Acts without announcing any tool call or asking permission.
		out, err := f.run("echo direct > direct.txt; cat direct.txt")
		if err != nil {
			f.chunk("run: " + err.Error() + ". ")
		} else {
			f.chunk("run: " + out)
		}
		if err := f.call(rWriteTextFile, map[string]any{"path": hello, "content": "direct\n"}, nil); err != nil {
			f.chunk("write: " + err.Error())
		}
		return map[string]any{"stopReason": stopEndTurn}, nil
	case "quits":
		// Like an agent that ends the turn when refused permission.
		f.toolCall("t1", "execute", "`rm -rf /`", map[string]any{"command": "rm -rf /"})
		if !f.permit("t1") {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: tool use refused"}
		}
		return map[string]any{"stopReason": stopEndTurn}, nil
	case "crash":
		f.chunk("About to fall over.")
		fmt.Fprintln(os.Stderr, "fake-agent: fatal: out of tokens")
		os.Exit(7)
	case "slow":
		if text == "again" {
			break
		}
		for i := 0; ; i++ {
			select {
			case <-f.cancelled:
				return map[string]any{"stopReason": stopCancelled}, nil
			case <-time.After(20 * time.Millisecond):
				f.chunk(fmt.Sprintf("word%d ", i))
			}
		}
	case "steer":
		if strings.HasPrefix(text, "STEER") {
			f.chunk("Steered: " + text)
			return map[string]any{"stopReason": stopEndTurn}, nil
		}
		f.toolCall("t1", "execute", "`true`", map[string]any{"command": "true"})
		if f.permit("t1") {
			f.run("true")
		}
		f.toolDone("t1", "completed", "")
		if !f.waitCancel() {
			return nil, fmt.Errorf("no cancel came")
		}
		return map[string]any{"stopReason": stopCancelled}, nil
	}
	f.chunk("fresh answer")
	return map[string]any{"stopReason": stopEndTurn}, nil
}

// fakeRig is the engine against the fake agent in mode.
func fakeRig(t *testing.T, mode string, decide func(context.Context, engine.ToolCall) engine.Verdict) *enginetest.Rig {
	t.Helper()
	r := enginetest.NewRig(t, enginetest.RigConfig{New: New, Decide: decide, TurnTimeout: time.Minute})
	command, _ := json.Marshal([]string{os.Args[0], "-test.run=^$"})
	r.Opts.Config[ConfigCommand] = string(command)
	r.Opts.Env = append(r.Opts.Env, fakeAgentEnv+"="+mode)
	return r
}
