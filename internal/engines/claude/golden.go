package claude

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

// The golden turn: the canonical turn (a Write and a Bash, both allowed;
// engineprobe.GoldenScenario and GoldenPrompt) whose protocol is recorded
// per CLI version in testdata/golden. The package's golden test records and
// checks it; ReplayGolden replays it on whatever CLI is installed
// (`supervisor doctor engines`).
const goldenFile = "allow-turn.ndjson"

//go:embed testdata/golden
var goldenFS embed.FS

// golden holds the transcripts, one folder per CLI version: on disk for the
// tests (which may rewrite them), embedded for a replay.
var (
	golden         = transcript.Golden{Dir: filepath.Join("testdata", "golden")}
	embeddedGolden = transcript.Golden{Dir: "testdata/golden", FS: goldenFS}
)

// goldenLines renders a golden turn's frames as its transcript: every
// frame the adapter wrote, normalised, the kind of every frame the CLI
// wrote, with the fields of the frames the adapter answers or reads results
// from, and, apart, the stream events of each model call (the CLI runs a
// tool's PreToolUse hook while the rest of the stream is still arriving, so
// how the two interleave varies from run to run). repl maps what changes
// from run to run (paths, the conversation id) to placeholders.
func goldenLines(frames []jsonrpc.Traced, repl map[string]string) ([]string, error) {
	n := newNormaliser(repl)
	var got, streams, stream []string
	for _, f := range frames {
		if f.Dir == jsonrpc.Received {
			if fr, err := parseFrame(f.Body); err == nil && fr.Type == typeStreamEvent {
				kind := strings.TrimPrefix(fr.kind(), typeStreamEvent+"/")
				stream = append(stream, kind)
				if kind == "message_stop" {
					line, _ := json.Marshal(map[string]any{"stream": stream})
					streams = append(streams, string(line))
					stream = nil
				}
				continue
			}
		}
		line, err := n.record(f)
		if err != nil {
			return nil, fmt.Errorf("record %s %s: %w", f.Dir, fragment(f.Body), err)
		}
		got = append(got, line)
	}
	return append(got, streams...), nil
}

// goldenReplacements are the placeholders of a golden transcript.
func goldenReplacements(cwd, dir, convID string) map[string]string {
	return map[string]string{
		cwd:               "<worktree>",
		configDirFor(dir): "<config>",
		dir:               "<session-dir>",
		convID:            "<conversation>",
	}
}

// ReplayGolden is the Claude Code engine's engineprobe.Replay: it plays
// the golden turn on the installed Claude Code CLI (o.EnginesDir; empty:
// PATH), env as its base environment, against the fake model at
// o.ModelEndpoint and compares its protocol with the transcript
// recorded for its version. It returns the CLI's version, and an error
// naming the first differing frame and its fields when they differ
// (transcript.ErrNoGolden wrapped when no transcript is recorded for that
// version), or when the turn could not be played.
func ReplayGolden(ctx context.Context, o engineprobe.ReplayRequest, env []string) (version string, err error) {
	var frames jsonrpc.Traffic
	e := New().(*Engine)
	e.tap = frames.Record
	convID, err := e.Start(ctx, o.StartOptions(env, CredentialItem, nil))
	if err != nil {
		e.Close()
		return e.version, fmt.Errorf("start the CLI: %w", err)
	}
	_, turnErr := e.Turn(ctx, engine.TurnInput{ID: "m1", Text: engineprobe.GoldenPrompt, Kind: "send"})
	if err := e.Close(); err != nil && turnErr == nil {
		turnErr = err
	}
	lines, err := goldenLines(frames.Messages(), goldenReplacements(o.Cwd, o.Dir, convID))
	if err != nil {
		return e.version, err
	}
	// The protocol first: a turn that failed because a frame changed is
	// named by the frame.
	if err := embeddedGolden.Compare(e.version, goldenFile, lines); err != nil {
		return e.version, err
	}
	if turnErr != nil {
		return e.version, fmt.Errorf("the golden turn: %w", turnErr)
	}
	return e.version, nil
}

// normaliser replaces what changes from run to run: paths, conversation and
// request ids, timestamps.
type normaliser struct {
	replacements []string // old, new pairs, longest old first
	ids          map[string]string
}

var (
	uuidPattern      = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timestampPattern = regexp.MustCompile(`\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z`)
)

func newNormaliser(repl map[string]string) *normaliser {
	olds := make([]string, 0, len(repl))
	for old := range repl {
		olds = append(olds, old)
	}
	sort.Slice(olds, func(i, j int) bool { return len(olds[i]) > len(olds[j]) })
	n := &normaliser{ids: map[string]string{}}
	for _, old := range olds {
		n.replacements = append(n.replacements, old, repl[old])
	}
	return n
}

func (n *normaliser) text(s string) string {
	s = strings.NewReplacer(n.replacements...).Replace(s)
	s = timestampPattern.ReplaceAllString(s, "<time>")
	return uuidPattern.ReplaceAllStringFunc(s, func(id string) string {
		if v, ok := n.ids[id]; ok {
			return v
		}
		v := fmt.Sprintf("<id-%d>", len(n.ids)+1)
		n.ids[id] = v
		return v
	})
}

// record renders one frame for the golden transcript.
func (n *normaliser) record(f jsonrpc.Traced) (string, error) {
	if f.Dir == jsonrpc.Sent {
		var v any
		if err := json.Unmarshal(f.Body, &v); err != nil {
			return "", err
		}
		norm, err := json.Marshal(map[string]any{"out": n.walk(v)})
		return string(norm), err
	}
	fr, err := parseFrame(f.Body)
	if err != nil {
		return "", err
	}
	rec := map[string]any{"in": fr.kind()}
	switch fr.Type {
	case typeControlRequest:
		rec["request"] = keysOf(fr.Request)
		var r struct {
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(fr.Request, &r) == nil && bytes.HasPrefix(bytes.TrimSpace(r.Input), []byte("{")) {
			rec["input"] = keysOf(r.Input)
		}
	case typeControlResponse:
		var r struct {
			Response json.RawMessage `json:"response"`
		}
		_ = json.Unmarshal(fr.Response, &r)
		rec["response"] = keysOf(r.Response)
	case typeResult:
		rec["fields"] = keysOf(fr.raw)
	}
	out, err := json.Marshal(rec)
	return string(out), err
}

func (n *normaliser) walk(v any) any {
	switch x := v.(type) {
	case string:
		return n.text(x)
	case []any:
		for i := range x {
			x[i] = n.walk(x[i])
		}
		return x
	case map[string]any:
		for k, val := range x {
			x[k] = n.walk(val)
		}
		return x
	}
	return v
}

// keysOf lists an object's keys, sorted.
func keysOf(raw json.RawMessage) []string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
