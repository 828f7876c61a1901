package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/transcript"
	"github.com/corral-dev/corral/pkg/engine"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// golden holds the canonical turn per CLI version
// (testdata/golden/<version>/canonical-turn.txt): what the adapter sends,
// normalised, and the kinds of message it receives with the fields each
// carries.
var golden = transcript.Golden{Dir: filepath.Join("testdata", "golden")}

const goldenFile = "canonical-turn.txt"

// The canonical turn, on the newest and the oldest supported CLI: a
// command the gate allows, then a patch it refuses (so the feedback steer
// and the decline are in it), then the answer.
func TestGoldenCanonicalTurn(t *testing.T) {
	enginetest.OnEachVersion(t, goldenCanonicalTurn)
}

func goldenCanonicalTurn(t *testing.T, oldest bool) {
	r := newRigOn(t, oldest, script(
		fakemodel.Step{Name: "cmd", Tools: tools(shellCall("call_cmd", "echo hello", true))},
		fakemodel.Step{Name: "patch", Tools: tools(patchCall("call_patch", "*** Begin Patch\n*** Add File: notes.txt\n+notes\n*** End Patch\n"))},
		fakemodel.Step{Name: "final", Text: "All done.", Chunks: 2},
	), func(_ context.Context, c engine.ToolCall) engine.Verdict {
		if c.Kind == engine.KindShell {
			return engine.Verdict{Allow: true}
		}
		return engine.Verdict{Message: "no notes, please"}
	})
	var rec enginetest.Traffic
	eng := New().(*Engine)
	eng.trace = rec.Record
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	if _, err := eng.Start(ctx, r.Opts); err != nil {
		t.Fatalf("Start: %v", describe(err))
	}
	r.eng, r.Eng = eng, eng
	r.MustTurn("Say hello, then write notes.")
	eng.Close()

	got := normaliseTranscript(rec.Messages(), map[string]string{r.Cwd: "<cwd>", r.Dir: "<session>"})
	path := golden.Path(eng.cliVersion, goldenFile)
	if *update {
		if err := golden.Write(eng.cliVersion, goldenFile, transcript.Lines(got)); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		near := transcript.Nearest(golden.Versions(), eng.cliVersion)
		if near == "" {
			t.Fatalf("no golden transcript for codex %s: %v (run go test -run TestGoldenCanonicalTurn -update to record it)", eng.cliVersion, err)
		}
		drift := compareTranscripts(readGolden(t, golden.Path(near, goldenFile)), got)
		t.Fatalf("no golden transcript for codex %s (run with -update to record it); against the nearest recorded, %s:\n%s", eng.cliVersion, near, orSame(drift))
	}
	if drift := compareTranscripts(string(want), got); drift != "" {
		t.Fatalf("the protocol of codex %s drifted from %s:\n%s\n(if the change is expected, rerun with -update)", eng.cliVersion, path, drift)
	}
}

func readGolden(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func orSame(drift string) string {
	if drift == "" {
		return "no drift"
	}
	return drift
}

// environmental are kinds whose arrival depends on the machine, not the
// protocol: the bubblewrap warning appears only where bwrap is not on PATH,
// and a short command's output arrives as outputDelta notifications or only
// in its completed item, depending on how the process is scheduled.
var environmental = map[string]bool{"configWarning": true, "item/commandExecution/outputDelta": true}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normaliseTranscript renders the golden form: "> " lines are what the
// adapter sent, in order, with ids and paths replaced; "< " lines are the
// kinds of message received, sorted, each with the sorted key paths its
// messages carried.
func normaliseTranscript(lines []enginetest.Message, paths map[string]string) string {
	ids := map[string]string{}
	norm := func(s string) string {
		for p, name := range paths {
			s = strings.ReplaceAll(s, p, name)
		}
		return uuidRE.ReplaceAllStringFunc(s, func(id string) string {
			if n, ok := ids[id]; ok {
				return n
			}
			n := fmt.Sprintf("<id%d>", len(ids)+1)
			ids[id] = n
			return n
		})
	}
	methodOf := map[string]string{} // our request ids → method
	var sent []string
	kinds := map[string]map[string]bool{}
	for _, l := range lines {
		m, err := jsonrpc.ParseMessage(l.Body)
		if err != nil {
			continue
		}
		if l.Dir == jsonrpc.Sent {
			if m.Kind == jsonrpc.KindRequest {
				methodOf[string(m.ID)] = m.Method
			}
			sent = append(sent, "> "+norm(string(l.Body)))
			continue
		}
		label, body := receivedKind(m, methodOf)
		// Ids seen first in received messages get their numbers in order.
		norm(string(l.Body))
		if environmental[label] {
			continue
		}
		if kinds[label] == nil {
			kinds[label] = map[string]bool{}
		}
		for _, k := range keyPaths(body, "", 3) {
			kinds[label][k] = true
		}
	}
	var b strings.Builder
	b.WriteString("# Sent by the adapter, in order (ids and paths normalised).\n")
	for _, s := range sent {
		b.WriteString(s + "\n")
	}
	b.WriteString("# Received message kinds, with the key paths they carried.\n")
	labels := make([]string, 0, len(kinds))
	for k := range kinds {
		labels = append(labels, k)
	}
	sort.Strings(labels)
	for _, label := range labels {
		keys := make([]string, 0, len(kinds[label]))
		for k := range kinds[label] {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintf(&b, "< %s: %s\n", label, strings.Join(keys, " "))
	}
	return b.String()
}

// receivedKind names a received message: its method (with the item type
// for item notifications), or the method its response answers.
func receivedKind(m jsonrpc.Message, methodOf map[string]string) (string, json.RawMessage) {
	switch m.Kind {
	case jsonrpc.KindReply:
		if m.Error != nil {
			return "error response to " + methodOf[string(m.ID)], nil
		}
		return "response to " + methodOf[string(m.ID)], m.Result
	case jsonrpc.KindRequest:
		return "request " + m.Method, m.Params
	}
	label := m.Method
	if strings.HasPrefix(m.Method, "item/started") || strings.HasPrefix(m.Method, "item/completed") {
		var p struct {
			Item struct {
				Type string `json:"type"`
			} `json:"item"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			label += "[" + p.Item.Type + "]"
		}
	}
	return label, m.Params
}

// keyPaths lists the object keys of raw as dotted paths, arrays as "[]",
// down to depth levels.
func keyPaths(raw json.RawMessage, prefix string, depth int) []string {
	if depth == 0 || len(raw) == 0 {
		return nil
	}
	raw = bytes.TrimSpace(raw)
	var out []string
	switch {
	case len(raw) > 0 && raw[0] == '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(raw, &obj) != nil {
			return nil
		}
		for k, v := range obj {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out = append(out, p)
			out = append(out, keyPaths(v, p, depth-1)...)
		}
	case len(raw) > 0 && raw[0] == '[':
		var arr []json.RawMessage
		if json.Unmarshal(raw, &arr) != nil {
			return nil
		}
		for _, v := range arr {
			out = append(out, keyPaths(v, prefix+"[]", depth)...)
		}
	}
	return out
}

// compareTranscripts names the first sent message that drifted and every
// received kind that appeared, vanished or changed its fields.
func compareTranscripts(want, got string) string {
	split := func(s string) (sent []string, recv map[string]string) {
		recv = map[string]string{}
		for _, l := range strings.Split(s, "\n") {
			switch {
			case strings.HasPrefix(l, "> "):
				sent = append(sent, l[2:])
			case strings.HasPrefix(l, "< "):
				label, keys, _ := strings.Cut(l[2:], ": ")
				recv[label] = keys
			}
		}
		return sent, recv
	}
	wantSent, wantRecv := split(want)
	gotSent, gotRecv := split(got)
	var d []string
	for i := 0; i < len(wantSent) || i < len(gotSent); i++ {
		var w, g string
		if i < len(wantSent) {
			w = wantSent[i]
		}
		if i < len(gotSent) {
			g = gotSent[i]
		}
		if w != g {
			d = append(d, fmt.Sprintf("sent message #%d (%s) drifted:\n  want %s\n  got  %s", i+1, sentMethod(w, g), w, g))
			break
		}
	}
	var labels []string
	for l := range wantRecv {
		labels = append(labels, l)
	}
	for l := range gotRecv {
		if _, ok := wantRecv[l]; !ok {
			labels = append(labels, l)
		}
	}
	sort.Strings(labels)
	for _, l := range labels {
		w, inWant := wantRecv[l]
		g, inGot := gotRecv[l]
		switch {
		case !inGot:
			d = append(d, fmt.Sprintf("received %q no longer arrives", l))
		case !inWant:
			d = append(d, fmt.Sprintf("received %q is new", l))
		case w != g:
			added, removed := setDiff(strings.Fields(g), strings.Fields(w)), setDiff(strings.Fields(w), strings.Fields(g))
			d = append(d, fmt.Sprintf("received %q changed its fields: added %v, removed %v", l, added, removed))
		}
	}
	return strings.Join(d, "\n")
}

func sentMethod(lines ...string) string {
	for _, l := range lines {
		if m, err := jsonrpc.ParseMessage([]byte(l)); err == nil {
			if m.Method != "" {
				return m.Method
			}
			return "reply to server request " + string(m.ID)
		}
	}
	return "?"
}

func setDiff(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
