package metrics

import (
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func census() Census {
	return Census{Sessions: map[wire.State]int{wire.StateIdle: 2, wire.StateWorking: 1, "notLive": 4}, Runners: 3, Spare: 1}
}

func line(typ, data string) (string, []byte) {
	return typ, []byte(fmt.Sprintf(`{"seq":1,"ts":"2026-12-01T00:00:00Z","type":%q,"data":%s}`, typ, data))
}

func feed(m *Metrics, session, engine string, events ...[2]string) {
	for _, e := range events {
		typ, l := line(e[0], e[1])
		m.Event(session, engine, []byte(typ), l)
	}
}

func TestEventsAreCountedByTypeAndWhatTheyCarry(t *testing.T) {
	m := New(census)
	feed(m, "s1", "script",
		[2]string{"sessionStarted", `{"engine":"script","cwd":"/w","mode":"review"}`},
		[2]string{"assistantDelta", `{"text":"a"}`},
		[2]string{"assistantDelta", `{"text":"b"}`},
		[2]string{"usage", `{"inputTokens":100,"outputTokens":20,"cacheReadTokens":5,"cacheWriteTokens":0,"costUsd":0.25,"estimated":true,"model":"script-1"}`},
		[2]string{"usage", `{"inputTokens":50,"outputTokens":10,"costUsd":0.5,"model":"script-1"}`},
		[2]string{"askOpened", `{"askId":"a1","toolId":"t1","tool":"Bash","category":"shell","reason":"r"}`},
		[2]string{"askOpened", `{"askId":"a2","toolId":"t2","tool":"Write","category":"edit","reason":"r"}`},
		[2]string{"askAnswered", `{"askId":"a1","decision":"allow","by":"user"}`},
		[2]string{"askAnswered", `{"askId":"a2","decision":"deny","by":"stopped"}`},
		[2]string{"askAnswered", `{"askId":"a9","decision":"deny","by":"expired"}`},
		[2]string{"toolFinished", `{"toolId":"t3","tool":"Bash","outcome":"ok","durationMs":1,"gate":{"decision":"allow","category":"shell"}}`},
		[2]string{"toolFinished", `{"toolId":"t4","tool":"Read","outcome":"denied","durationMs":1,"gate":{"decision":"deny","category":"read"}}`},
		[2]string{"toolFinished", `{"toolId":"t1","tool":"Bash","outcome":"ok","durationMs":1,"gate":{"decision":"ask","category":"shell"}}`},
		[2]string{"toolFinished", `{"toolId":"t5","tool":"Bash","outcome":"ok","durationMs":1}`},
		[2]string{"hunkDecided", `{"editId":"e1","hunkId":"h1","decision":"accept","by":"user"}`},
		[2]string{"hunkDecided", `{"editId":"e1","hunkId":"h2","decision":"reject","by":"user"}`},
		[2]string{"failure", `{"code":"engineError","message":"m"}`},
		[2]string{"failure", `{"code":"permissionUnavailable","message":"m"}`},
		[2]string{"turnEnded", `{"turn":1,"outcome":"done","durationMs":5,"usage":{}}`},
		[2]string{"someFutureType", `{}`},
	)
	for _, c := range []struct {
		name string
		got  float64
		want float64
	}{
		{"events sessionStarted", testutil.ToFloat64(m.events.known["sessionStarted"].n), 1},
		{"events assistantDelta", testutil.ToFloat64(m.events.known["assistantDelta"].n), 2},
		{"events other", testutil.ToFloat64(m.events.other), 1},
		{"spend", testutil.ToFloat64(m.spend.WithLabelValues("script", "script-1")), 0.75},
		{"input tokens", testutil.ToFloat64(m.tokens.WithLabelValues("script", "script-1", "input")), 150},
		{"output tokens", testutil.ToFloat64(m.tokens.WithLabelValues("script", "script-1", "output")), 30},
		{"cache read tokens", testutil.ToFloat64(m.tokens.WithLabelValues("script", "script-1", "cacheRead")), 5},
		{"asks shell", testutil.ToFloat64(m.gateAsks.WithLabelValues("shell")), 1},
		{"asks edit", testutil.ToFloat64(m.gateAsks.WithLabelValues("edit")), 1},
		{"allow shell by user", testutil.ToFloat64(m.gateDecided.WithLabelValues("allow", "shell", "user")), 1},
		{"deny edit by stop", testutil.ToFloat64(m.gateDecided.WithLabelValues("deny", "edit", "stopped")), 1},
		{"deny unknown expired", testutil.ToFloat64(m.gateDecided.WithLabelValues("deny", "unknown", "expired")), 1},
		{"deny unattended", testutil.ToFloat64(m.gateDecided.WithLabelValues("deny", "unknown", "unattended")), 1},
		{"allow shell by rule", testutil.ToFloat64(m.gateDecided.WithLabelValues("allow", "shell", "rule")), 1},
		{"deny read by rule", testutil.ToFloat64(m.gateDecided.WithLabelValues("deny", "read", "rule")), 1},
		{"an asked call is not counted twice", testutil.ToFloat64(m.gateDecided.WithLabelValues("ask", "shell", "rule")), 0},
		{"hunks accepted", testutil.ToFloat64(m.hunks.WithLabelValues("accept", "user")), 1},
		{"hunks rejected", testutil.ToFloat64(m.hunks.WithLabelValues("reject", "user")), 1},
		{"engine failures", testutil.ToFloat64(m.failures.WithLabelValues("script", "engineError")), 1},
		{"turns", testutil.ToFloat64(m.turns.WithLabelValues("script", "done")), 1},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
	if n := len(m.asks.byAsk); n != 0 {
		t.Errorf("%d asks remembered after every ask was answered", n)
	}
}

func TestStartsCrashesLinkAndCapAreRecorded(t *testing.T) {
	m := New(census)
	m.SessionStart(3*time.Millisecond, true, nil)
	m.SessionStart(40*time.Millisecond, false, nil)
	m.SessionStart(time.Second, false, wire.Errorf(wire.CodeEngineError, "no"))
	m.SessionStart(time.Second, false, errors.New("plain"))
	m.RunnerExit(true)
	m.RunnerExit(false)
	m.SetNATSLink(LinkReconnecting)
	m.SetMaxLive(12)
	if n := testutil.CollectAndCount(m.startTime); n != 2 {
		t.Errorf("%d start histograms, want spare and new", n)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"engine_error starts", testutil.ToFloat64(m.startFailed.WithLabelValues("engine_error")), 1},
		{"internal starts", testutil.ToFloat64(m.startFailed.WithLabelValues("internal")), 1},
		{"crashes", testutil.ToFloat64(m.crashes), 1},
		{"nats", testutil.ToFloat64(m.natsLink), 2},
		{"max live", testutil.ToFloat64(m.maxLive), 12},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}

func TestHandlerServesTheCensusAndBuildInTextFormat(t *testing.T) {
	m := New(census)
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/plain") {
		t.Fatalf("status %d, type %q", rec.Code, rec.Header().Get("Content-Type"))
	}
	for _, want := range []string{
		`corral_sessions{state="idle"} 2`,
		`corral_sessions{state="working"} 1`,
		`corral_sessions{state="notLive"} 4`,
		`corral_live_runners 3`,
		`corral_spare_runners 1`,
		`corral_nats_link_state 0`,
		`corral_build_info{`,
		`go_goroutines `,
		`process_open_fds `,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
}

func TestHostileLabelValuesStayBounded(t *testing.T) {
	m := New(census)
	for i := range 500 {
		feed(m, "s", fmt.Sprintf("engine-%d", i),
			[2]string{"usage", fmt.Sprintf(`{"inputTokens":1,"costUsd":1,"model":"model-%d"}`, i)},
			[2]string{"failure", fmt.Sprintf(`{"code":"made-up-%d"}`, i)},
			[2]string{"askOpened", fmt.Sprintf(`{"askId":"a%d","category":"cat-%d"}`, i, i)},
		)
	}
	feed(m, "s", "script",
		[2]string{"usage", `{"inputTokens":-5,"outputTokens":1,"costUsd":-3,"model":"has space"}`},
		[2]string{"usage", `{"costUsd":1e400}`},
	)
	if n := testutil.CollectAndCount(m.spend); n > maxEngineLabels*maxModelLabels {
		t.Errorf("%d spend series", n)
	}
	if n := len(m.models.seen); n > maxModelLabels {
		t.Errorf("%d model names kept", n)
	}
	if n := len(m.engines.seen); n > maxEngineLabels {
		t.Errorf("%d engine names kept", n)
	}
	if n := testutil.CollectAndCount(m.failures); n > maxEngineLabels+1 {
		t.Errorf("%d failure series for 500 made-up codes", n)
	}
	if v := testutil.ToFloat64(m.failures.WithLabelValues(other, other)); v == 0 {
		t.Error("later engines' made-up codes not counted under other")
	}
	if n := testutil.CollectAndCount(m.gateAsks); n != 1 {
		t.Errorf("%d ask series for made-up categories, want only other", n)
	}
	if v := testutil.ToFloat64(m.tokens.WithLabelValues("script", other, "input")); v != 0 {
		t.Errorf("negative tokens counted: %v", v)
	}
	if v := testutil.ToFloat64(m.spend.WithLabelValues("script", unknown)); v != 0 || math.IsInf(v, 0) {
		t.Errorf("an infinite cost was counted: %v", v)
	}
	if n := len(m.asks.byAsk); n > maxOpenAsks {
		t.Errorf("%d open asks remembered", n)
	}
}

// FuzzEvent feeds arbitrary lines: nothing panics, and the series stay
// bounded whatever the lines say.
func FuzzEvent(f *testing.F) {
	for _, seed := range [][2]string{
		{"usage", `{"data":{"costUsd":0.1,"model":"m"}}`},
		{"askOpened", `{"data":{"askId":"a","category":"shell"}}`},
		{"failure", `{"data":{"code":"engineError"}}`},
		{"hunkDecided", `{"data":{"decision":"accept","by":"user"}}`},
		{"turnEnded", `{"data":{"outcome":`},
	} {
		f.Add("engine", seed[0], []byte(seed[1]))
	}
	m := New(census)
	f.Fuzz(func(t *testing.T, engine, typ string, line []byte) {
		m.Event("s", engine, []byte(typ), line)
		if n := len(m.models.seen) + len(m.engines.seen); n > maxModelLabels+maxEngineLabels {
			t.Fatalf("%d names kept", n)
		}
	})
}
