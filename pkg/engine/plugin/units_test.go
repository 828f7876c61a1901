package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/event"
)

func TestDescribeHandshake(t *testing.T) {
	cases := []struct {
		name   string
		err    string
		exited bool
		want   string
	}{
		{"other engine protocol", "incompatible API version with plugin. Plugin version: 2, Client versions: [1]", false, "engine protocol 2"},
		{"other core protocol", "incompatible core API version with plugin. Plugin version: 9, Core version: 1\n\nTo fix this", false, "go-plugin core protocol 9"},
		{"grpc transport", `unsupported plugin protocol "grpc". Supported: [netrpc]`, false, "the grpc transport"},
		{"no handshake in time", "timeout while waiting for plugin to start", false, "no handshake line within " + handshakeTimeout.String()},
		{"a stray line", "Unrecognized remote plugin message: Hello\nThis usually means", true, `the line "Hello" instead of a handshake line`},
		{"exited silently", "Unrecognized remote plugin message: \nFailed to read any lines", true, "the plugin exited (exit status 1) without a handshake line; its stderr begins: boom"},
		{"exited before connect", "plugin exited before we could connect", true, "the plugin exited (exit status 1) without a handshake line; its stderr begins: boom"},
		{"anything else", "strange", false, "strange"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := describeHandshake(errors.New(c.err), c.exited, "exit status 1", "boom"); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// Two streams share one crash tail; each hands over whole lines however
// its writes are cut.
func TestLineWritersShareATailLineByLine(t *testing.T) {
	tail := proc.NewTail(stderrLines)
	a := &lineWriter{tail: tail, log: zap.NewNop(), stream: "stderr"}
	b := &lineWriter{tail: tail, log: zap.NewNop(), stream: "stderr"}
	var wg sync.WaitGroup
	for _, w := range []*lineWriter{a, b} {
		wg.Add(1)
		go func(w *lineWriter) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				fmt.Fprintf(w, "line")
				fmt.Fprintf(w, " %d", i)
				fmt.Fprintf(w, "\n")
			}
		}(w)
	}
	wg.Wait()
	fmt.Fprint(a, "unterminated")
	a.flush()
	lines := tail.Lines()
	if len(lines) != 21 || lines[20] != "unterminated" {
		t.Fatalf("tail %q", lines)
	}
	for _, l := range lines[:20] {
		var n int
		if _, err := fmt.Sscanf(l, "line %d", &n); err != nil || l != fmt.Sprintf("line %d", n) {
			t.Fatalf("a torn line %q in %q", l, lines)
		}
	}
	fmt.Fprint(a, strings.Repeat("x", 3*maxLine)+"\n")
	if got := tail.Lines(); len(got[len(got)-1]) != maxLine {
		t.Fatalf("a runaway line kept %d bytes, want %d", len(got[len(got)-1]), maxLine)
	}
}

func TestDecodeEvent(t *testing.T) {
	cases := []struct {
		typ     event.Type
		data    string
		want    any
		wantErr string
	}{
		{event.AssistantDelta, `{"text":"hi"}`, event.TextData{Text: "hi"}, ""},
		{event.Usage, `{"inputTokens":5,"costUsd":0.5,"estimated":true}`, event.UsageData{InputTokens: 5, CostUSD: 0.5, Estimated: true}, ""},
		{event.ToolFinished, `{"toolId":"t","outcome":"ok"}`, event.ToolFinishedData{ToolID: "t", Outcome: "ok"}, ""},
		{event.TurnEnded, `{}`, nil, "a plugin may emit"},
		{event.HunkStaged, `{}`, nil, "not \"hunkStaged\""},
		{event.Usage, `{"inputTokens":"many"}`, nil, "usage event data"},
		{event.Context, ``, nil, "context event has no data"},
		{event.Retry, `[1,2]`, nil, "retry event data"},
	}
	for _, c := range cases {
		t.Run(string(c.typ)+" "+c.data, func(t *testing.T) {
			got, err := decodeEvent(c.typ, json.RawMessage(c.data))
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("error %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %#v, %v; want %#v", got, err, c.want)
			}
		})
	}
	big := json.RawMessage(`{"text":"` + strings.Repeat("x", maxEventData) + `"}`)
	if _, err := decodeEvent(event.AssistantText, big); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Fatalf("oversized event: %v", err)
	}
}

// FuzzDecodeEvent feeds the decoder what a plugin could send: it must
// answer with a value of the event's own type or an error, never panic.
func FuzzDecodeEvent(f *testing.F) {
	f.Add("assistantDelta", []byte(`{"text":"hello"}`))
	f.Add("toolStarted", []byte(`{"toolId":"t1","tool":"Bash","kind":"shell","command":"ls"}`))
	f.Add("usage", []byte(`{"inputTokens":12,"outputTokens":3,"costUsd":0.01}`))
	f.Add("turnEnded", []byte(`{"outcome":"done"}`))
	f.Add("context", []byte(`null`))
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		v, err := decodeEvent(event.Type(typ), data)
		if err != nil {
			if v != nil {
				t.Fatalf("a value %#v with error %v", v, err)
			}
			return
		}
		if _, err := json.Marshal(v); err != nil {
			t.Fatalf("decoded %#v does not marshal: %v", v, err)
		}
	})
}
