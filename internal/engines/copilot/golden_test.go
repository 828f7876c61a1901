package copilot

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from a run against the real CLI")

// TestGoldenCanonicalTurn pins, on the newest and the oldest supported
// CLI, what the adapter sends for a canonical turn (create a session, send,
// approve a file write, shut down) and which kinds of message it receives,
// so a new CLI version that changes either shows up as a named drift. Each
// version has its transcript in testdata/golden/<version>/. Run with
// -update to accept a change or record a new version.
func TestGoldenCanonicalTurn(t *testing.T) {
	enginetest.OnEachVersion(t, goldenCanonicalTurn)
}

// onOldestCLI points the engine at the oldest supported CLI's install.
func onOldestCLI(t testing.TB) rigOption {
	return func(r *rig) { r.Opts.Config[locate.KeyEnginesDir] = testenv.NeedOldestEngineCLI(t, "copilot") }
}

func goldenCanonicalTurn(t *testing.T, oldest bool) {
	var traffic jsonrpc.Traffic
	opts := []rigOption{withTrace(traffic.Record)}
	if oldest {
		opts = append(opts, onOldestCLI(t))
	}
	r := newRig(t, fakemodel.Scenario{Steps: []fakemodel.Step{
		toolStep("create", `{"path":"${cwd}/hello.txt","file_text":"Hello!\n"}`),
		{Text: "Created hello.txt."},
	}}, allow, opts...)
	r.start()
	r.MustTurn("Please create hello.txt containing a greeting.")
	if err := r.eng.Close(); err != nil {
		t.Fatal(err)
	}

	var sent []string
	methods := map[string]string{} // request id → method
	kinds := map[string]bool{}
	for _, m := range traffic.Messages() {
		var msg rpcMessage
		if err := json.Unmarshal(m.Body, &msg); err != nil {
			t.Fatal(err)
		}
		if m.Dir == jsonrpc.Sent {
			methods[string(msg.ID)] = msg.Method
			sent = append(sent, normalizeSent(t, m.Body, r))
			continue
		}
		switch {
		case msg.Method == notifySessionEvent:
			var p sessionEventParams
			if err := json.Unmarshal(msg.Params, &p); err != nil {
				t.Fatal(err)
			}
			kinds["event "+p.Event.Type] = true
		case msg.Method != "" && len(msg.ID) > 0:
			kinds["request "+msg.Method] = true
		case msg.Method != "":
			kinds["notification "+msg.Method] = true
		case msg.Error != nil:
			kinds["error for "+methods[string(msg.ID)]] = true
		default:
			kinds["result for "+methods[string(msg.ID)]] = true
		}
	}
	received := make([]string, 0, len(kinds))
	for k := range kinds {
		received = append(received, k)
	}
	sort.Strings(received)

	version := cliVersion(t, traffic.Messages())
	compareSent(t, version, "canonical-turn.sent.jsonl", sent)
	compareKinds(t, version, "canonical-turn.received.txt", received)
}

// cliVersion is the version the CLI reported in its answer to connect.
func cliVersion(t *testing.T, traffic []jsonrpc.Traced) string {
	t.Helper()
	connectID := ""
	for _, m := range traffic {
		var msg rpcMessage
		if json.Unmarshal(m.Body, &msg) != nil {
			continue
		}
		if m.Dir == jsonrpc.Sent && msg.Method == methodConnect {
			connectID = string(msg.ID)
		}
		if m.Dir != jsonrpc.Sent && connectID != "" && string(msg.ID) == connectID && msg.Method == "" {
			var res connectResult
			if err := json.Unmarshal(msg.Result, &res); err != nil || res.Version == "" {
				t.Fatalf("connect's answer names no CLI version: %s", m.Body)
			}
			return res.Version
		}
	}
	t.Fatal("no answer to connect in the traffic")
	return ""
}

// normalizeSent replaces what differs between runs (ids, paths, ports) by
// placeholders; keys come out sorted.
func normalizeSent(t *testing.T, body []byte, r *rig) string {
	t.Helper()
	var msg map[string]any
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if params, ok := msg["params"].(map[string]any); ok {
		for key, placeholder := range map[string]string{
			"sessionId": "<session>", "requestId": "<request>", "workingDirectory": "<cwd>",
		} {
			if _, ok := params[key]; ok {
				params[key] = placeholder
			}
		}
		if p, ok := params["provider"].(map[string]any); ok && p["baseUrl"] == r.Opts.ModelEndpoint {
			p["baseUrl"] = "<endpoint>"
		}
	}
	var out strings.Builder
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(out.String(), "\n")
}

func compareSent(t *testing.T, version, file string, got []string) {
	t.Helper()
	want := golden(t, version, file, got)
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(want):
			t.Errorf("sent message %d is new: %s", i+1, got[i])
		case i >= len(got):
			t.Errorf("sent message %d is no longer sent: %s", i+1, want[i])
		case got[i] != want[i]:
			t.Errorf("sent message %d (%s) drifted:\n got: %s\nwant: %s", i+1, methodOf(want[i]), got[i], want[i])
		}
	}
}

func compareKinds(t *testing.T, version, file string, got []string) {
	t.Helper()
	want := golden(t, version, file, got)
	inWant := map[string]bool{}
	for _, k := range want {
		inWant[k] = true
	}
	for _, k := range got {
		if !inWant[k] {
			t.Errorf("received message kind %q is new", k)
		}
		delete(inWant, k)
	}
	for _, k := range want {
		if inWant[k] {
			t.Errorf("received message kind %q is no longer received", k)
		}
	}
}

// goldenDir holds the transcripts, one folder per CLI version.
var goldenDir = transcript.Golden{Dir: filepath.Join("testdata", "golden")}

// golden returns the lines of version's golden file, first rewriting it
// with got under -update. Without a recording for version it fails,
// naming the nearest recorded version and how got differs from it.
func golden(t *testing.T, version, file string, got []string) []string {
	t.Helper()
	if *update {
		if err := goldenDir.Write(version, file, got); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(goldenDir.Path(version, file))
	if err != nil {
		t.Fatalf("%v (copilot %s: run the test with -update to record it)", goldenDir.Compare(version, file, got), version)
	}
	return transcript.Lines(string(b))
}

func methodOf(line string) string {
	var m rpcMessage
	if json.Unmarshal([]byte(line), &m) != nil || m.Method == "" {
		return "reply"
	}
	return m.Method
}
