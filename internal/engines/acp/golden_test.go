package acp

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/transcript"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// ignoredUpdates are session updates Corral does not use; their timing
// (the agent sends its command list whenever it has it) is no contract.
var ignoredUpdates = map[string]bool{
	"available_commands_update": true, "current_mode_update": true,
	"config_option_update": true, "session_info_update": true,
}

// renderTranscript renders protocol traffic for a golden file. What Corral sent
// is kept whole, normalised (ids dropped, the session id and folders
// replaced); what it received is kept as the kind of each message and the
// key paths it carried. Each direction is its own section, in stream
// order, with repeats of the same line collapsed.
func renderTranscript(msgs []jsonrpc.Traced, paths map[string]string) string {
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
	b.WriteString("# ACP traffic of the canonical turn (Create hello.txt, then show it) with this\n")
	b.WriteString("# version of @zed-industries/claude-code-acp. Regenerate with -update.\n")
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

// keyPaths lists the key paths of a JSON value, sorted ("a.b", "c[].d"),
// leaving out the agent's own extensions (_meta).
func keyPaths(raw json.RawMessage) string { return transcript.KeyPaths(raw, "_meta") }

// goldenDir holds the transcripts, one folder per agent version.
var goldenDir = transcript.Golden{Dir: filepath.Join("testdata", "golden")}

// checkGolden compares got with version's golden file, naming the first
// message that drifted and, for received messages, the fields that
// appeared or went missing; under -update it records got instead.
func checkGolden(t *testing.T, version, file, got string) {
	t.Helper()
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if *updateGolden {
		if err := goldenDir.Write(version, file, lines); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := goldenDir.Compare(version, file, lines); err != nil {
		t.Fatalf("%v\n(rerun with -update if the agent changed on purpose)", err)
	}
}
