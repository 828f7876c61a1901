package metrics_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/metrics"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/httpapi"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.uber.org/zap/zaptest"
)

// buildRunner builds the real runner binary for this test.
func buildRunner(t *testing.T) string {
	t.Helper()
	gobin := testenv.NeedGo(t)
	dir := t.TempDir()
	cmd := exec.Command(gobin, "build", "-o", dir+string(os.PathSeparator), "github.com/corral-dev/corral/cmd/runner")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return filepath.Join(dir, "runner")
}

// scenario makes one turn produce every kind of event the metrics count:
// hunks to review, asks, usage, a failure.
const scenario = `{
  "model": "script-1",
  "turns": [{"match": "go", "steps": [
    {"say": "writing two files"},
    {"tool": "write", "path": "a.txt", "content": "one\ntwo\nthree\n"},
    {"tool": "shell", "command": "touch made-by-shell.txt"},
    {"tool": "edit", "path": "a.txt", "old": "two", "new": "deux"},
    {"tool": "shell", "command": "rm -f made-by-shell.txt", "costUsd": 0.5},
    {"fail": {"code": "engineError", "message": "scripted failure"}}
  ]}]
}`

// TestScrapedMetricsMatchTheEventsThatProducedThem drives a real runner on
// the script engine through a turn with asks, hunk review, usage and a
// failure, then scrapes /metrics through the API's handler and checks
// every event-derived number against the session's events.jsonl.
func TestScrapedMetricsMatchTheEventsThatProducedThem(t *testing.T) {
	runner := buildRunner(t)
	state, work := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "scenario.json"), []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	var m *supervisor.Manager
	met := metrics.New(func() metrics.Census {
		c := m.Census()
		return metrics.Census{Sessions: c.Sessions, Runners: c.Runners, Spare: c.Spare}
	})
	m, err := supervisor.New(supervisor.Config{StateDir: state, RunnerPath: runner, Observer: met,
		Logger: zaptest.NewLogger(t), SpareRunner: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(httpapi.FromManager(m), httpapi.Options{Metrics: met.Handler()}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	s, err := m.Create(ctx, wire.Spec{Engine: "script", Cwd: work, Scenario: filepath.Join(work, "scenario.json"), Mode: "review"})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Events(ctx, s.ID, 1, true)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := m.Command(ctx, s.ID, command.Send{Text: "go"}); err != nil || !r.OK {
		t.Fatalf("send: %v %+v", err, r)
	}
	// Answer asks (allow the first, deny the next) and review hunks
	// (accept the first edit, reject the next) until the turn ends.
	asks, edits := 0, 0
	for {
		ev, err := st.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var cmd command.Request
		switch string(ev.Type) {
		case "askOpened":
			var d struct{ Data event.AskOpenedData }
			json.Unmarshal(ev.Line, &d)
			decision := command.DecisionAllow
			if asks++; asks > 1 {
				decision = command.DecisionDeny
			}
			cmd = command.Answer{AskID: d.Data.AskID, Decision: decision}
		case "hunkStaged":
			var d struct {
				Data struct {
					EditID string `json:"editId"`
					Auto   bool   `json:"auto"`
					Edit   struct {
						Hunks []struct{ ID string } `json:"hunks"`
					} `json:"edit"`
				}
			}
			json.Unmarshal(ev.Line, &d)
			edits++
			for _, h := range d.Data.Edit.Hunks {
				decision := command.DecisionAccept
				if edits > 1 {
					decision = command.DecisionReject
				}
				if r, err := m.Command(ctx, s.ID, command.DecideHunk{EditID: d.Data.EditID, HunkID: h.ID, Decision: decision}); err != nil || !r.OK {
					t.Fatalf("decide %s/%s: %v %+v", d.Data.EditID, h.ID, err, r)
				}
			}
		}
		if cmd != nil {
			if r, err := m.Command(ctx, s.ID, cmd); err != nil || !r.OK {
				t.Fatalf("%s: %v %+v", cmd.Cmd(), err, r)
			}
		}
		if string(ev.Type) == "turnEnded" {
			break
		}
	}
	st.Close()
	// Once the runner has stopped, the supervisor has read every line it
	// wrote: the metrics have seen every event the log holds.
	if err := m.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	want := expected(t, filepath.Join(state, "sessions", s.ID, "events.jsonl"))
	if want.asks == 0 || want.ruled == 0 || want.hunks == 0 || want.spend == 0 || len(want.failures) == 0 {
		t.Fatalf("the scenario did not produce what the test checks: %+v", want)
	}
	t.Logf("events.jsonl: %d events %v; asks %v, answers %v, hunks %v, failures %v, turns %v, $%v",
		want.total, want.events, want.gateAsks, want.gateDecisions, want.hunkDecisions, want.failures, want.turns, want.spend)
	got := scrape(t, srv.URL+"/metrics")

	for typ, n := range want.events {
		if v := got.value("corral_events_total", "type", typ); v != float64(n) {
			t.Errorf("corral_events_total{type=%q} = %v, events.jsonl has %d", typ, v, n)
		}
	}
	if v := got.sum("corral_events_total"); v != float64(want.total) {
		t.Errorf("corral_events_total sums to %v, events.jsonl has %d events", v, want.total)
	}
	for key, n := range want.gateAsks {
		if v := got.value("corral_gate_asks_total", "category", key); v != float64(n) {
			t.Errorf("corral_gate_asks_total{category=%q} = %v, want %d", key, v, n)
		}
	}
	for key, n := range want.gateDecisions {
		if v := got.value("corral_gate_decisions_total", "decision", key[0], "category", key[1], "by", key[2]); v != float64(n) {
			t.Errorf("corral_gate_decisions_total%v = %v, want %d", key, v, n)
		}
	}
	for key, n := range want.hunkDecisions {
		if v := got.value("corral_hunk_decisions_total", "decision", key[0], "by", key[1]); v != float64(n) {
			t.Errorf("corral_hunk_decisions_total%v = %v, want %d", key, v, n)
		}
	}
	for code, n := range want.failures {
		if v := got.value("corral_engine_failures_total", "engine", "script", "code", code); v != float64(n) {
			t.Errorf("corral_engine_failures_total{code=%q} = %v, want %d", code, v, n)
		}
	}
	for outcome, n := range want.turns {
		if v := got.value("corral_turns_total", "engine", "script", "outcome", outcome); v != float64(n) {
			t.Errorf("corral_turns_total{outcome=%q} = %v, want %d", outcome, v, n)
		}
	}
	if v := got.value("corral_spend_usd_total", "engine", "script", "model", "script-1"); fmt.Sprintf("%.9f", v) != fmt.Sprintf("%.9f", want.spend) {
		t.Errorf("corral_spend_usd_total = %v, the usage events add up to %v", v, want.spend)
	}
	for kind, n := range want.tokens {
		if v := got.value("corral_tokens_total", "engine", "script", "model", "script-1", "kind", kind); v != float64(n) {
			t.Errorf("corral_tokens_total{kind=%q} = %v, want %d", kind, v, n)
		}
	}
	if n := got.histogramCount("corral_session_start_seconds", "runner", "spare"); n != 1 {
		t.Errorf("%d session starts in the spare recorded, want 1", n)
	}
	if v := got.value("corral_sessions", "state", "notLive"); v != 1 {
		t.Errorf("after shutdown corral_sessions{state=notLive} = %v, want 1", v)
	}
}

// counts is what events.jsonl says the metrics must be.
type counts struct {
	events        map[string]int
	total, asks   int
	hunks, ruled  int
	gateAsks      map[string]int
	gateDecisions map[[3]string]int
	hunkDecisions map[[2]string]int
	failures      map[string]int
	turns         map[string]int
	tokens        map[string]int64
	spend         float64
}

func expected(t *testing.T, log string) counts {
	t.Helper()
	raw, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	c := counts{events: map[string]int{}, gateAsks: map[string]int{}, gateDecisions: map[[3]string]int{},
		hunkDecisions: map[[2]string]int{}, failures: map[string]int{}, turns: map[string]int{}, tokens: map[string]int64{}}
	categories := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev struct {
			Type string
			Data json.RawMessage
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		c.events[ev.Type]++
		c.total++
		switch ev.Type {
		case "askOpened":
			var d event.AskOpenedData
			json.Unmarshal(ev.Data, &d)
			categories[d.AskID] = d.Category
			c.gateAsks[d.Category]++
			c.asks++
		case "askAnswered":
			var d event.AskAnsweredData
			json.Unmarshal(ev.Data, &d)
			c.gateDecisions[[3]string{d.Decision, categories[d.AskID], d.By}]++
		case "toolFinished":
			var d event.ToolFinishedData
			json.Unmarshal(ev.Data, &d)
			if d.Gate != nil && d.Gate.Decision != "ask" {
				c.gateDecisions[[3]string{d.Gate.Decision, d.Gate.Category, "rule"}]++
				c.ruled++
			}
		case "hunkDecided":
			var d event.HunkDecidedData
			json.Unmarshal(ev.Data, &d)
			c.hunkDecisions[[2]string{d.Decision, d.By}]++
			c.hunks++
		case "failure":
			var d event.FailureData
			json.Unmarshal(ev.Data, &d)
			c.failures[string(d.Code)]++
		case "turnEnded":
			var d event.TurnEndedData
			json.Unmarshal(ev.Data, &d)
			c.turns[d.Outcome]++
		case "usage":
			var d event.UsageData
			json.Unmarshal(ev.Data, &d)
			c.spend += d.CostUSD
			c.tokens["input"] += d.InputTokens
			c.tokens["output"] += d.OutputTokens
		}
	}
	return c
}

// scraped is a parsed /metrics page.
type scraped map[string]*dto.MetricFamily

func scrape(t *testing.T, url string) scraped {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return scraped(fams)
}

// value is the counter or gauge of family name whose labels are the given
// name/value pairs; 0 when there is none.
func (s scraped) value(name string, labels ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
next:
	for _, m := range f.Metric {
		have := map[string]string{}
		for _, l := range m.Label {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Untyped != nil:
			return m.Untyped.GetValue()
		}
	}
	return 0
}

func (s scraped) sum(name string) float64 {
	var total float64
	if f := s[name]; f != nil {
		for _, m := range f.Metric {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// histogramCount is the sample count of the histogram of family name
// with the given label.
func (s scraped) histogramCount(name, label, value string) uint64 {
	if f := s[name]; f != nil {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if l.GetName() == label && l.GetValue() == value {
					return m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
