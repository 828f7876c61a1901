package acp

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/jsonrpc"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// ignoredUpdates are session updates Corral does not use; their timing
// (the agent sends its command list whenever it has it) is no contract.
var ignoredUpdates = map[string]bool{
	"available_commands_update": true, "current_mode_update": true,
	"config_option_update": true, "session_info_update": true,
}

// transcript renders protocol traffic for a golden file. What Corral sent
// is kept whole, normalised (ids dropped, the session id and folders
// replaced); what it received is kept as the kind of each message and the
// key paths it carried. Each direction is its own section, in stream
// order, with repeats of the same line collapsed.
func transcript(msgs []enginetest.Message, paths map[string]string) string {
	sessionID := ""
	for _, m := range msgs {
		var v struct {
			Result struct {
				SessionID string `json:"sessionId"`
			} `json:"result"`
		}
		if m.Dir == jsonrpc.Received && json.Unmarshal(m.Body, &v) == nil && v.Result.SessionID != "" {
			sessionID = v.Result.SessionID
			break
		}
	}
	normal := func(s string) string {
		for from, to := range paths {
			s = strings.ReplaceAll(s, from, to)
		}
		if sessionID != "" {
			s = strings.ReplaceAll(s, sessionID, "<session-id>")
		}
		return s
	}
	ours, theirs := map[string]string{}, map[string]string{} // request id -> method
	var sent, received []string
	for _, m := range msgs {
		msg, err := jsonrpc.ParseMessage(m.Body)
		if err != nil {
			continue
		}
		id := string(msg.ID)
		switch {
		case m.Dir == jsonrpc.Sent && msg.Kind == jsonrpc.KindRequest:
			ours[id] = msg.Method
			sent = append(sent, "request "+msg.Method+" "+normal(canonical(msg.Params)))
		case m.Dir == jsonrpc.Sent && msg.Kind == jsonrpc.KindNotification:
			sent = append(sent, "notification "+msg.Method+" "+normal(canonical(msg.Params)))
		case m.Dir == jsonrpc.Sent:
			body := canonical(msg.Result)
			if msg.Error != nil {
				body = "error " + msg.Error.Message
			}
			sent = append(sent, "reply "+theirs[id]+" "+normal(body))
		case msg.Kind == jsonrpc.KindRequest:
			theirs[id] = msg.Method
			received = append(received, "request "+msg.Method+": "+keyPaths(msg.Params))
		case msg.Kind == jsonrpc.KindNotification:
			var n struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
				} `json:"update"`
			}
			json.Unmarshal(msg.Params, &n)
			if ignoredUpdates[n.Update.SessionUpdate] {
				continue
			}
			received = append(received, "notification "+msg.Method+" "+n.Update.SessionUpdate+": "+keyPaths(msg.Params))
		default:
			what := "reply " + ours[id] + ": " + keyPaths(msg.Result)
			if msg.Error != nil {
				what = "error reply " + ours[id]
			}
			received = append(received, what)
		}
	}
	var b strings.Builder
	b.WriteString("# ACP traffic of the canonical turn (Create hello.txt, then show it) with the\n")
	b.WriteString("# pinned @zed-industries/claude-code-acp. Regenerate with -update.\n")
	b.WriteString("## Sent by Corral\n")
	writeCollapsed(&b, sent)
	b.WriteString("## Received from the agent (message kinds and the key paths they carried)\n")
	writeCollapsed(&b, received)
	return b.String()
}

func writeCollapsed(b *strings.Builder, lines []string) {
	for i, l := range lines {
		if i > 0 && lines[i-1] == l {
			continue
		}
		b.WriteString(l + "\n")
	}
}

// canonical re-encodes JSON with sorted keys.
func canonical(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "null"
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// keyPaths lists the key paths of a JSON value, sorted ("a.b", "c[].d").
func keyPaths(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "(not JSON)"
	}
	set := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, val := range x {
				if k == "_meta" {
					continue // the agent's own extensions
				}
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				set[p] = true
				walk(p, val)
			}
		case []any:
			for _, val := range x {
				walk(prefix+"[]", val)
			}
		}
	}
	walk("", v)
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, " ")
}

// checkGolden compares got with the golden file, naming the first message
// that drifted and, for received messages, the fields that appeared or
// went missing.
func checkGolden(t *testing.T, path, got string) {
	t.Helper()
	if *updateGolden {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if d := drift(string(want), got); d != "" {
		t.Fatalf("the ACP traffic drifted from %s:\n%s", path, d)
	}
}

// drift describes the first difference between two transcripts.
func drift(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl == gl {
			continue
		}
		msg := fmt.Sprintf("line %d, first differing message:\n  want %s\n  got  %s", i+1, wl, gl)
		wk, wf, _ := strings.Cut(wl, ": ")
		gk, gf, _ := strings.Cut(gl, ": ")
		if wk == gk {
			missing, extra := diffFields(strings.Fields(wf), strings.Fields(gf))
			msg += fmt.Sprintf("\n  fields gone: %v\n  fields new:  %v", missing, extra)
		}
		return msg
	}
	return ""
}

func diffFields(want, got []string) (missing, extra []string) {
	in := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, f := range want {
		if !in(got, f) {
			missing = append(missing, f)
		}
	}
	for _, f := range got {
		if !in(want, f) {
			extra = append(extra, f)
		}
	}
	return missing, extra
}

func TestDriftNamesTheFirstDifferingMessageAndItsFields(t *testing.T) {
	want := "## Sent\nrequest initialize {}\nnotification session/update tool_call: sessionId update.kind update.title\n"
	got := "## Sent\nrequest initialize {}\nnotification session/update tool_call: sessionId update.kind update.name\n"
	d := drift(want, got)
	if !strings.Contains(d, "line 3") || !strings.Contains(d, "fields gone: [update.title]") || !strings.Contains(d, "fields new:  [update.name]") {
		t.Fatalf("drift = %s", d)
	}
	if drift(want, want) != "" {
		t.Fatal("no drift between equal transcripts")
	}
}
