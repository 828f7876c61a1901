package codex

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/transcript"
	"github.com/corral-dev/corral/pkg/engine"
)

// The golden turn: a command the gate allows, then a patch it refuses (so
// the feedback steer and the decline are in it), then the answer
// (engineprobe.GoldenScenario("codex")). Its protocol is recorded per CLI
// version in testdata/golden/<version>/canonical-turn.txt: what the adapter
// sends, normalised, and the kinds of message it receives with the fields
// each carries. The package's golden test records and checks it;
// ReplayGolden replays it on whatever CLI is installed (`supervisor doctor
// engines`).
const (
	goldenFile = "canonical-turn.txt"
	// goldenPrompt is what the golden turn asks; it is in the transcript.
	goldenPrompt = "Say hello, then write notes."
	// goldenModel is a model the pinned CLI knows (an unknown one loses
	// the apply_patch tool); it is in the transcript.
	goldenModel = "gpt-5.5"
	// goldenRefusal is why the gate refuses the golden turn's patch; it is
	// in the feedback steer the transcript records.
	goldenRefusal = "no notes, please"
)

//go:embed testdata/golden
var goldenFS embed.FS

// golden holds the transcripts, one folder per CLI version: on disk for the
// tests (which may rewrite them), embedded for a replay.
var (
	golden         = transcript.Golden{Dir: filepath.Join("testdata", "golden")}
	embeddedGolden = transcript.Golden{Dir: "testdata/golden", FS: goldenFS}
)

// goldenDecide is the gate of the golden turn: commands pass, patches do
// not.
func goldenDecide(_ context.Context, c engine.ToolCall) engine.Verdict {
	if c.Kind == engine.KindShell {
		return engine.Verdict{Allow: true}
	}
	return engine.Verdict{Message: goldenRefusal}
}

// ReplayGolden is the Codex engine's engineprobe.Replay: it plays the
// golden turn on the installed Codex CLI (o.EnginesDir; empty: PATH), env
// as its base environment, against the fake model at o.ModelEndpoint and compares its protocol with the transcript recorded for
// its version. It returns the CLI's version, and an error naming the first
// differing line and its fields when they differ (transcript.ErrNoGolden
// wrapped when no transcript is recorded for that version), or when the
// turn could not be played.
func ReplayGolden(ctx context.Context, o engineprobe.ReplayRequest, env []string) (version string, err error) {
	var rec jsonrpc.Traffic
	e := New().(*Engine)
	e.trace = rec.Record
	opts := o.StartOptions(env, CredentialItem, goldenDecide)
	opts.Model = goldenModel
	_, err = e.Start(ctx, opts)
	if err != nil {
		e.Close()
		return e.cliVersion, fmt.Errorf("start the CLI: %w", err)
	}
	_, turnErr := e.Turn(ctx, engine.TurnInput{ID: "m1", Text: goldenPrompt, Kind: "send"})
	if err := e.Close(); err != nil && turnErr == nil {
		turnErr = err
	}
	got := normaliseTranscript(rec.Messages(), goldenPaths(o.Cwd, o.Dir))
	// The protocol first: a turn that failed because a message changed is
	// named by the message.
	if err := embeddedGolden.Compare(e.cliVersion, goldenFile, transcript.Lines(got)); err != nil {
		return e.cliVersion, err
	}
	if turnErr != nil {
		return e.cliVersion, fmt.Errorf("the golden turn: %w", turnErr)
	}
	return e.cliVersion, nil
}

// goldenPaths are the placeholders of a golden transcript's paths.
func goldenPaths(cwd, dir string) map[string]string {
	return map[string]string{cwd: "<cwd>", dir: "<session>"}
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
func normaliseTranscript(lines []jsonrpc.Traced, paths map[string]string) string {
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
