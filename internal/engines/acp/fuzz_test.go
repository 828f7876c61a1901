package acp

import (
	"encoding/json"
	"testing"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// FuzzSessionUpdate feeds arbitrary session/update payloads to a running
// turn: nothing panics, every tool call that finishes was started first
// and finishes once, and whatever the gate is shown is well formed.
func FuzzSessionUpdate(f *testing.F) {
	for _, s := range []string{
		`{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}`,
		`{"sessionUpdate":"tool_call","toolCallId":"t","kind":"execute","title":"x","rawInput":{"command":"ls"},"status":"pending"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"t","status":"completed","content":[{"type":"content","content":{"type":"text","text":"ok"}}]}`,
		`{"sessionUpdate":"tool_call","toolCallId":"e","kind":"edit","locations":[{"path":"a.txt"}],"status":"failed","rawOutput":"boom","_meta":{"claudeCode":{"toolName":"mcp__github__create_issue"}}}`,
		`{"sessionUpdate":"plan","entries":[{"content":"x","priority":"low","status":"completed"}]}`,
		`{"sessionUpdate":"usage_update","used":5,"size":0,"cost":{"amount":1e308,"currency":"usd"}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"","status":"completed"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		host := enginetest.NewHost(nil)
		e := &Engine{host: host, log: zap.NewNop(), terms: newTerminals(), opts: engine.StartOptions{Cwd: "/work", Host: host}}
		a := &agent{}
		tt := newTurn()
		defer tt.cancelPermits()
		var u update
		if json.Unmarshal(raw, &u) != nil {
			return
		}
		e.mu.Lock()
		e.applyLocked(tt, a, u)
		e.applyLocked(tt, a, u) // twice: updates repeat
		e.mu.Unlock()
		e.endTurn(tt, "", nil)
		started := map[string]int{}
		for _, ev := range host.Events() {
			var d struct {
				ToolID string `json:"toolId"`
			}
			json.Unmarshal(ev.Data, &d)
			switch ev.Type {
			case event.ToolStarted:
				started[d.ToolID]++
				if started[d.ToolID] > 1 {
					t.Fatalf("tool %q started twice", d.ToolID)
				}
			case event.ToolFinished:
				if started[d.ToolID] != 1 {
					t.Fatalf("tool %q finished without starting", d.ToolID)
				}
				started[d.ToolID]++
			}
		}
		for id, n := range started {
			if n != 2 {
				t.Fatalf("tool %q left open (%d)", id, n)
			}
		}
		for _, tc := range tt.tools {
			c := tc.call("/work")
			if c.Kind == engine.KindShell && c.Command == "" || c.Kind == engine.KindMCP && (c.Server == "" || c.MCPTool == "") {
				t.Fatalf("malformed call %+v", c)
			}
		}
	})
}
