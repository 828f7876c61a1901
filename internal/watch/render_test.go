package watch

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/event"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/golden")

// testSession is the id the golden transcripts are rendered for.
const testSession = "3f2a9c0d1e4b"

// events gives a case's events their seq and a time 100 ms apart.
func (c goldenCase) wireEvents() []event.Event {
	base := time.Date(2026, 11, 30, 10, 4, 5, 0, time.UTC)
	out := make([]event.Event, len(c.events))
	for i, e := range c.events {
		out[i] = event.Event{Seq: int64(i + 1), TS: base.Add(time.Duration(i) * 100 * time.Millisecond), Type: event.Type(e.typ)}
		if e.data != "" {
			out[i].Data = json.RawMessage(e.data)
		}
	}
	return out
}

// transcript renders events one after the other as Render's caller does.
func transcript(events []event.Event, style Style) string {
	st := NewState(testSession)
	var b strings.Builder
	for _, e := range events {
		for _, l := range Render(e, st, style) {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// checkGolden compares got with testdata/golden/name, or rewrites it
// with -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
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
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestRenderMatchesGoldenFiles(t *testing.T) {
	styles := []struct {
		name  string
		style Style
	}{
		{"plain", PlainStyle()},
		{"color", ANSIStyle()},
	}
	for _, c := range goldenCases {
		for _, s := range styles {
			t.Run(c.name+"/"+s.name, func(t *testing.T) {
				checkGolden(t, c.name+"."+s.name+".txt", transcript(c.wireEvents(), s.style))
			})
		}
	}
}

func TestRenderDemoTranscriptMatchesGoldenFiles(t *testing.T) {
	events := readEventLog(t, filepath.Join("testdata", "demo.jsonl"))
	checkGolden(t, "demo.plain.txt", transcript(events, PlainStyle()))
	checkGolden(t, "demo.color.txt", transcript(events, ANSIStyle()))
}

func readEventLog(t testing.TB, path string) []event.Event {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var events []event.Event
	sc := bufio.NewScanner(bytes.NewReader(raw))
	for sc.Scan() {
		var e event.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		events = append(events, e)
	}
	return events
}

// TestGoldenCasesCoverEveryDocumentedEventType keeps the golden files in
// step with docs/events.md: a type documented there without a case here
// fails.
func TestGoldenCasesCoverEveryDocumentedEventType(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "events.md"))
	if err != nil {
		t.Fatal(err)
	}
	covered := make(map[string]bool)
	for _, c := range goldenCases {
		covered[c.covers] = true
	}
	heading := regexp.MustCompile(`(?m)^### (.+)$`)
	var documented []string
	for _, m := range heading.FindAllStringSubmatch(string(doc), -1) {
		for _, name := range strings.Split(m[1], ",") {
			documented = append(documented, strings.TrimSpace(name))
		}
	}
	if len(documented) < 20 {
		t.Fatalf("found only %d event types in docs/events.md: %v", len(documented), documented)
	}
	for _, name := range documented {
		if !covered[name] {
			t.Errorf("event type %q of docs/events.md has no golden case", name)
		}
	}
}

func TestPlainRenderingHasNoEscapeSequences(t *testing.T) {
	for _, c := range goldenCases {
		out := transcript(c.wireEvents(), PlainStyle())
		if strings.ContainsAny(out, "\x1b\r\a\b") {
			t.Errorf("%s: plain output holds a control character: %q", c.name, out)
		}
	}
}

func TestColorRenderingColoursTheDiff(t *testing.T) {
	out := transcript(goldenCase{events: opening(ev{"hunkStaged", modifyMain})}.wireEvents(), ANSIStyle())
	for _, want := range []string{"\x1b[32m+    os.Exit(run())", "\x1b[31m-    fmt.Println(\"hi\")", "\x1b[36m@@ -12,2 +12,3 @@"} {
		if !strings.Contains(out, want) {
			t.Errorf("colour transcript lacks %q:\n%q", want, out)
		}
	}
}

func TestStateFollowsTheTurn(t *testing.T) {
	steps := []struct {
		typ, data    string
		wantActivity string // "" for idle
		wantStream   string
	}{
		{"sessionStarted", `{"engine":"script","mode":"review"}`, "", ""},
		{"turnStarted", `{"turn":1,"messageId":"m1","text":"go"}`, "working", ""},
		{"assistantDelta", `{"text":"Look"}`, "working", "Look"},
		{"assistantDelta", `{"text":"ing around."}`, "working", "Looking around."},
		{"assistantText", `{"text":"Looking around."}`, "working", ""},
		{"toolStarted", `{"toolId":"t1","tool":"Bash","kind":"shell","summary":"uptime","command":"uptime"}`, "uptime", ""},
		{"askOpened", `{"askId":"a1","toolId":"t1","tool":"Bash","category":"shell","reason":"r","command":"uptime"}`, "waiting for an answer", ""},
		{"askAnswered", `{"askId":"a1","decision":"allow","by":"user"}`, "uptime", ""},
		{"toolFinished", `{"toolId":"t1","tool":"Bash","outcome":"ok","durationMs":3,"exitCode":0}`, "working", ""},
		{"toolStarted", writeStarted, "Write hello.txt", ""},
		{"hunkStaged", createHello, "waiting for review", ""},
		{"hunkDecided", `{"editId":"e1","hunkId":"h1","decision":"accept","by":"user"}`, "Write hello.txt", ""},
		{"usage", `{"inputTokens":10,"outputTokens":2,"costUsd":0.25}`, "Write hello.txt", ""},
		{"turnEnded", `{"turn":1,"outcome":"done","durationMs":5}`, "", ""},
	}
	st := NewState(testSession)
	for i, s := range steps {
		Render(event.Event{Seq: int64(i + 1), Type: event.Type(s.typ), Data: json.RawMessage(s.data)}, st, PlainStyle())
		label, _, ok := st.Activity()
		if ok != (s.wantActivity != "") || label != s.wantActivity {
			t.Errorf("after %s: activity %q (busy %v), want %q", s.typ, label, ok, s.wantActivity)
		}
		if got := st.Streaming(); got != s.wantStream {
			t.Errorf("after %s: streaming %q, want %q", s.typ, got, s.wantStream)
		}
	}
	if st.Spent() != 0.25 {
		t.Errorf("spent %v, want 0.25", st.Spent())
	}
}

func TestAMessageIsShownOnceWhateverTheOrderItsTurnReports(t *testing.T) {
	c := goldenCase{events: []ev{
		{"turnStarted", `{"turn":1,"messageId":"m1","text":"go"}`},
		{"userMessage", `{"id":"m1","text":"go","kind":"send","queued":false}`},
	}}
	if got, want := transcript(c.wireEvents(), PlainStyle()), "› go · turn 1\n"; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
}
