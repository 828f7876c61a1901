package claude

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden from a fresh run")

// TestGoldenAllowTurn records the protocol of the canonical turn (Write and
// Bash, both allowed) on the newest and the oldest supported CLI: every
// frame the adapter writes, normalised, the kind of every frame the CLI
// writes, with the fields of the frames the adapter answers or reads
// results from, and the stream events of each model call. Each version has
// its golden transcript (testdata/golden/<version>/); a CLI whose protocol
// differs fails here, naming the first frame that changed and its fields.
// Run with -update to record a new version's.
func TestGoldenAllowTurn(t *testing.T) {
	enginetest.OnEachVersion(t, goldenAllowTurn)
}

func goldenAllowTurn(t *testing.T, oldest bool) {
	s := newSession(t, writeBashScenario(), sessionOpts{decide: allowAll, oldest: oldest})
	s.MustTurn("Create hello.txt, then show it.")
	if err := s.eng.Close(); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	frames := append([]tappedFrame(nil), s.frames...)
	s.mu.Unlock()
	n := newNormaliser(map[string]string{
		s.Cwd:               "<worktree>",
		configDirFor(s.Dir): "<config>",
		s.Dir:               "<session-dir>",
		s.ConvID:            "<conversation>",
	})
	// Stream events are recorded apart, one line per model call: the CLI
	// runs a tool's PreToolUse hook while the rest of the stream is still
	// arriving, so how the two interleave varies from run to run.
	var got, streams []string
	var stream []string
	for _, f := range frames {
		if f.dir == dirIn {
			if fr, err := parseFrame(f.line); err == nil && fr.Type == typeStreamEvent {
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
			t.Fatalf("record %c %s: %v", f.dir, fragment(f.line), err)
		}
		got = append(got, line)
	}
	got = append(got, streams...)
	compareGolden(t, s.eng.version, "allow-turn.ndjson", got)
}

// golden holds the transcripts, one folder per CLI version.
var golden = transcript.Golden{Dir: filepath.Join("testdata", "golden")}

// compareGolden compares lines with version's golden file, or records it
// under -update.
func compareGolden(t *testing.T, version, file string, got []string) {
	t.Helper()
	if *update {
		if err := golden.Write(version, file, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := golden.Compare(version, file, got); err != nil {
		t.Fatalf("%v\n(rerun with -update if the CLI changed on purpose)", err)
	}
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
func (n *normaliser) record(f tappedFrame) (string, error) {
	if f.dir == dirOut {
		var v any
		if err := json.Unmarshal(f.line, &v); err != nil {
			return "", err
		}
		norm, err := json.Marshal(map[string]any{"out": n.walk(v)})
		return string(norm), err
	}
	fr, err := parseFrame(f.line)
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
