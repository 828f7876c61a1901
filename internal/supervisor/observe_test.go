package supervisor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestRunnerLogLinesReachTheLogAtTheirOwnLevelWithTheSession(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	m := newScriptManager(t, testrunner.LogLines, func(c *Config) { c.Logger = zap.New(core) })
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	// Once the runner is gone, the supervisor has read all its stderr.
	if err := m.Delete(ctxT(t), s.ID); err != nil {
		t.Fatal(err)
	}
	// Entries by message; the runner's own stderr lines that are no log
	// entry by message and line.
	got := map[string]observer.LoggedEntry{}
	for _, e := range logs.FilterLoggerName("runner").All() {
		key := e.Message
		if key == "runner stderr" {
			key += fmt.Sprint(": ", fieldText(e.ContextMap()["line"]))
		}
		got[key] = e
	}
	for _, want := range []struct {
		msg   string
		level zapcore.Level
		field string
		value any
	}{
		{"fake info", zapcore.InfoLevel, "n", "2"},
		{"fake warning", zapcore.WarnLevel, "detail", `{"why":"testing"}`},
		{"fake error", zapcore.ErrorLevel, "n", "4"},
		{"runner stderr", zapcore.WarnLevel, "line", "not a log entry"},
	} {
		key := want.msg
		if key == "runner stderr" {
			key += ": " + fmt.Sprint(want.value)
		}
		e, ok := got[key]
		if !ok {
			t.Errorf("no %q in the supervisor's log; it has %v", want.msg, messages(logs.All()))
			continue
		}
		if e.Level != want.level {
			t.Errorf("%q logged at %v, want %v", want.msg, e.Level, want.level)
		}
		fields := e.ContextMap()
		if fields["session"] != s.ID {
			t.Errorf("%q has session %v, want %s", want.msg, fields["session"], s.ID)
		}
		if v := fieldText(fields[want.field]); v != want.value {
			t.Errorf("%q has %s=%v, want %v", want.msg, want.field, v, want.value)
		}
		if _, ok := fields["ts"]; ok {
			t.Errorf("%q kept the runner's time stamp", want.msg)
		}
	}
	if _, ok := got["fake debug"]; ok {
		t.Error("a debug line reached a log at info")
	}
}

func messages(es []observer.LoggedEntry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Message)
	}
	return out
}

// fieldText is a field's value as the runner wrote it.
func fieldText(v any) any {
	switch x := v.(type) {
	case []byte:
		return string(x)
	case interface{ MarshalJSON() ([]byte, error) }:
		raw, _ := x.MarshalJSON()
		return string(raw)
	}
	return v
}

func TestRunnerLogLevelFollowsTheSupervisors(t *testing.T) {
	for _, c := range []struct {
		log  *zap.Logger
		want string
	}{
		{zap.New(zapcore.NewNopCore()), "error"},
		{zap.NewNop(), "error"},
		{zap.New(mustCore(zapcore.WarnLevel)), "warn"},
		{zap.New(mustCore(zapcore.DebugLevel)), "debug"},
	} {
		if got := runnerLevel(c.log); got != c.want {
			t.Errorf("runner level %q, want %q", got, c.want)
		}
	}
}

func mustCore(l zapcore.Level) zapcore.Core {
	core, _ := observer.New(l)
	return core
}

func TestStderrLinesAreBoundedAndSplitAcrossWrites(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	sink := &stderrSink{tail: proc.NewTail(4), session: func() string { return "s1" }}
	sink.start(zap.New(core))
	long := make([]byte, 3*maxStderrLine)
	for i := range long {
		long[i] = 'x'
	}
	sink.Write([]byte(`{"level":"warn","msg":"split`))
	sink.Write([]byte(` across writes"}` + "\n" + string(long)))
	sink.Write([]byte("\n\n   \n"))
	all := logs.All()
	if len(all) != 2 {
		t.Fatalf("%d entries, want 2: %v", len(all), messages(all))
	}
	if all[0].Message != "split across writes" || all[0].Level != zapcore.WarnLevel {
		t.Errorf("first entry %q at %v", all[0].Message, all[0].Level)
	}
	if n := len(all[1].ContextMap()["line"].(string)); n != maxStderrLine {
		t.Errorf("a long line was kept at %d bytes, want %d", n, maxStderrLine)
	}
}

func FuzzParseLogLine(f *testing.F) {
	for _, l := range testrunner.LogLinesWritten {
		f.Add([]byte(l))
	}
	f.Add([]byte(`{"level":"fatal","msg":"x"}`))
	f.Add([]byte(`{"level":"dpanic","msg":"x","session":"other"}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		if len(line) == 0 {
			return
		}
		lvl, _, _, ok := parseLogLine(line)
		if ok && lvl > zapcore.ErrorLevel {
			t.Fatalf("a runner's line would be logged at %v", lvl)
		}
	})
}

// observed is an Observer that keeps what it was told.
type observed struct {
	mu      sync.Mutex
	starts  []bool // spare or not, for each start that succeeded
	failed  int
	events  []string
	engines []string
	exits   []bool
}

func (r *observed) SessionStart(took time.Duration, spare bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.failed++
		return
	}
	r.starts = append(r.starts, spare)
}

func (r *observed) Event(session, engine string, typ, line []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, string(typ))
	r.engines = append(r.engines, engine)
}

func (r *observed) RunnerExit(crashed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exits = append(r.exits, crashed)
}

func TestObserverSeesStartsEventsAndExits(t *testing.T) {
	rec := &observed{}
	m := newScriptManager(t, "", func(c *Config) { c.Observer = rec })
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "hello"})
	evs := readUntil(t, m, s.ID, 1, "turnEnded")
	if err := m.Delete(ctxT(t), s.ID); err != nil {
		t.Fatal(err)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Without SpareRunner the session starts a runner of its own.
	if !slices.Equal(rec.starts, []bool{false}) {
		t.Errorf("starts %v, want one in a runner of its own", rec.starts)
	}
	// The runner's last event, as it stops, follows the turn.
	if want := append(types(evs), string(event.Stopped)); !slices.Equal(rec.events, want) {
		t.Errorf("observer saw %v, want the log's %v", rec.events, want)
	}
	for _, e := range rec.engines {
		if e != "script" {
			t.Fatalf("an event was reported on engine %q", e)
		}
	}
	if !slices.Equal(rec.exits, []bool{false}) {
		t.Errorf("exits %v, want one that is no crash", rec.exits)
	}
}

func TestObserverCountsACrashAndAFailedStart(t *testing.T) {
	rec := &observed{}
	m := newScriptManager(t, testrunner.CrashOnSend, func(c *Config) { c.Observer = rec })
	s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
	if err != nil {
		t.Fatal(err)
	}
	m.Command(ctxT(t), s.ID, command.Send{Text: "boom"})
	waitFor(t, func() bool { return !m.Live(s.ID) })
	failing := newScriptManager(t, "", func(c *Config) { c.Observer = rec })
	if _, err := failing.Create(ctxT(t), wire.Spec{Engine: "script", Scenario: "/nonexistent/scenario.yaml"}); err == nil {
		t.Fatal("a start the runner refused succeeded")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The send is tried on the next runner after each crash, up to
	// sendRetries times: each crash is counted.
	if len(rec.exits) != sendRetries+1 || slices.Contains(rec.exits, false) || rec.failed != 1 {
		t.Errorf("exits %v (want %d crashes), failed starts %d (want 1)", rec.exits, sendRetries+1, rec.failed)
	}
}

func TestCensusCountsSessionsByStateAndALoweredCapStopsQuietRunners(t *testing.T) {
	m := newScriptManager(t, "")
	ctx := ctxT(t)
	var ids []string
	for range 3 {
		s, err := m.Create(ctx, scriptSpec(t, askScenario))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
	}
	check := func(want map[wire.State]int, runners int) {
		t.Helper()
		c := m.Census()
		for _, s := range censusStates {
			if c.Sessions[s] != want[s] {
				t.Errorf("census %v, want %v", c.Sessions, want)
				break
			}
		}
		if c.Runners != runners {
			t.Errorf("census counts %d runners, want %d", c.Runners, runners)
		}
	}
	check(map[wire.State]int{wire.StateIdle: 3}, 3)

	mustCommand(t, m, ids[2], command.Send{Text: "make"})
	readUntil(t, m, ids[2], 1, "askOpened")
	// The runner reports its state before it answers a command, so the
	// supervisor knows of the ask once status is answered.
	mustCommand(t, m, ids[2], command.GetStatus{})
	check(map[wire.State]int{wire.StateIdle: 2, wire.StateWaitingForApproval: 1}, 3)

	// Down to one: one quiet runner stops; the one waiting for a person
	// stays, outside the cap (Config.MaxWaiting), beside the other.
	if err := m.SetMaxLive(1); err != nil {
		t.Fatal(err)
	}
	if m.MaxLive() != 1 {
		t.Fatalf("MaxLive %d after SetMaxLive(1)", m.MaxLive())
	}
	waitFor(t, func() bool { return m.LiveCount() == 2 })
	if !m.Live(ids[2]) {
		t.Fatal("the session waiting for an answer was stopped")
	}
	check(map[wire.State]int{wire.StateWaitingForApproval: 1, wire.StateIdle: 1, StateNotLive: 1}, 2)
	if err := m.SetMaxLive(0); err == nil {
		t.Error("a cap of 0 was accepted")
	}
}

func TestAStartPastALoweredCapIsRefusedWhileEveryRunnerIsBusy(t *testing.T) {
	m := newScriptManager(t, "")
	ctx := ctxT(t)
	// A running turn keeps its runner busy (a session waiting on an ask
	// would wait outside the cap: Config.MaxWaiting).
	s, err := m.Create(ctx, scriptSpec(t, slowScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "make"})
	readUntil(t, m, s.ID, 1, "turnStarted")
	mustCommand(t, m, s.ID, command.GetStatus{})
	if err := m.SetMaxLive(1); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := m.Create(short, scriptSpec(t, askScenario)); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("a second session past --max-live 1 with the first busy: %v, want unavailable", err)
	}
}
