package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/internal/eventlog/eventlogtest"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestLoopNeedsUnattendedAndASpendCap(t *testing.T) {
	base := wire.Spec{ID: "l", Engine: "script", Loop: &wire.Loop{Prompt: "tick", EveryMS: 1000}}
	cases := []struct {
		name string
		edit func(*wire.Spec)
		ok   bool
	}{
		{"attended", func(s *wire.Spec) { s.SpendCapUSD = 1 }, false},
		{"no cap", func(s *wire.Spec) { s.Unattended = true }, false},
		{"too fast", func(s *wire.Spec) { s.Unattended, s.SpendCapUSD, s.Loop.EveryMS = true, 1, 10 }, false},
		{"valid", func(s *wire.Spec) { s.Unattended, s.SpendCapUSD = true, 1 }, true},
	}
	for _, c := range cases {
		spec := base
		l := *base.Loop
		spec.Loop = &l
		c.edit(&spec)
		if err := validateLoop(spec); (err == nil) != c.ok {
			t.Errorf("%s: validateLoop = %v", c.name, err)
		}
	}
}

func TestTimedLoopWithAnAskTurnsIntoPermissionUnavailable(t *testing.T) {
	sc := `
turns:
  - steps:
      - tool: shell
        command: "uptime"
fallback:
  steps:
    - tool: shell
      command: "uptime"
`
	s := newSession(t, sc, func(sp *wire.Spec) {
		sp.Unattended, sp.SpendCapUSD = true, 5
		sp.Loop = &wire.Loop{Prompt: "check uptime", EveryMS: 1000, Count: 2}
	})
	_, i := s.waitType(0, event.TurnEnded)
	s.waitType(i+1, event.TurnEnded)
	fails := s.all(event.Failure)
	if len(fails) < 2 {
		t.Fatalf("%d failures, want one per loop run:\n%s", len(fails), s.dump())
	}
	for _, f := range fails {
		if decode[event.FailureData](t, f).Code != event.FailPermissionUnavailable {
			t.Fatalf("failure %s", f.Data)
		}
	}
	for _, m := range s.all(event.UserMessage) {
		if decode[event.UserMessageData](t, m).Kind != "loop" {
			t.Fatalf("loop message kind %s", m.Data)
		}
	}
	if n := len(s.all(event.AskOpened)); n != 0 {
		t.Fatalf("the loop opened %d asks", n)
	}
}

func TestInheritStartsWithAHandoffOfTheParent(t *testing.T) {
	// The goal is marked done: a goal check would queue a turn that races
	// the parent's close and changes its last answer.
	parent := newSession(t, writeAndRun, func(sp *wire.Spec) { sp.Mode = "auto"; sp.Goal = &wire.Goal{Text: "notes exist", Done: true} })
	parent.do(command.Send{Text: "please write notes"})
	parent.waitType(0, event.TurnEnded)
	parent.r.Close()

	// Sessions are siblings in one folder; the child names the parent by id.
	childDir := filepath.Join(filepath.Dir(parent.dir), "child")
	child := &session{t: t, dir: childDir, cwd: parent.cwd}
	child.start(wire.Spec{ID: "child", Engine: "script", Cwd: parent.cwd, Parent: filepath.Base(parent.dir), Scenario: scenarioFile(t, "turns: []")})
	ev, _ := child.waitType(0, event.TurnStarted)
	text := decode[event.TurnStartedData](t, ev).Text
	for _, want := range []string{"Handoff", "please write notes", "notes.txt", "notes exist", "Done."} {
		if !strings.Contains(text, want) {
			t.Errorf("handoff lacks %q:\n%s", want, text)
		}
	}
}

func TestPrintMode(t *testing.T) {
	cases := []struct {
		name     string
		scenario string
		mode     string
		ok       bool
		answer   string
		failure  event.FailureCode
	}{
		{"answer", "turns:\n  - steps:\n      - say: \"forty-two\"\n", "", true, "forty-two", ""},
		{"failure", "turns:\n  - steps:\n      - fail: {code: signInExpired, message: key rejected}\n", "", false, "", event.FailSignInExpired},
		{"ask becomes unavailable", asked, "", false, "after", event.FailPermissionUnavailable},
		{"auto mode writes", writeAndRun, "auto", true, "Done.", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cwd := t.TempDir()
			var stream bytes.Buffer
			res, err := RunPrint(context.Background(), Options{
				Dir:     t.TempDir(),
				Spec:    wire.Spec{ID: "p", Engine: "script", Cwd: cwd, Mode: c.mode, Scenario: scenarioFile(t, c.scenario)},
				Engines: map[string]engine.Factory{"script": script.New},
			}, "go", &stream)
			if err != nil {
				t.Fatal(err)
			}
			if res.OK() != c.ok || res.Answer != c.answer {
				t.Fatalf("result %+v (failure %+v)", res, res.Failure)
			}
			if c.failure != "" && (res.Failure == nil || res.Failure.Code != c.failure) {
				t.Fatalf("failure %+v, want %s", res.Failure, c.failure)
			}
			if !bytes.Contains(stream.Bytes(), []byte(`"type":"turnEnded"`)) {
				t.Fatal("the stream did not carry the events")
			}
		})
	}
}

func TestPresenceFollowsTheState(t *testing.T) {
	s := newSession(t, asked, nil)
	read := func() command.Status {
		var st command.Status
		raw, err := os.ReadFile(filepath.Join(s.dir, PresenceFile))
		if err == nil {
			err = json.Unmarshal(raw, &st)
		}
		if err != nil {
			return command.Status{}
		}
		return st
	}
	waitPresence := func(want wire.State) command.Status {
		deadline := time.Now().Add(waitLimit)
		for time.Now().Before(deadline) {
			if st := read(); st.State == want {
				return st
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatalf("presence never became %s (last %+v)", want, read())
		return command.Status{}
	}
	waitPresence(wire.StateIdle)
	s.do(command.Send{Text: "go"})
	ev, _ := s.waitType(0, event.AskOpened)
	st := waitPresence(wire.StateWaitingForApproval)
	if !strings.Contains(st.Activity, "Bash") || st.LastSeq == 0 {
		t.Fatalf("presence while asking: %+v", st)
	}
	s.do(command.Answer{AskID: decode[event.AskOpenedData](t, ev).AskID, Decision: "allow"})
	s.waitType(0, event.TurnEnded)
	st = waitPresence(wire.StateIdle)
	if st.Usage.CostUSD <= 0 || st.Turn != 1 {
		t.Fatalf("presence after the turn: %+v", st)
	}
}

func TestForkRotatesToANewSessionAndBothContinue(t *testing.T) {
	sc := `
turns:
  - steps:
      - say: "first"
  - steps:
      - say: "second"
`
	var rotations [][2]string
	s := &session{t: t, dir: filepath.Join(t.TempDir(), "orig"), cwd: t.TempDir(), rec: eventlogtest.New(waitLimit)}
	r, err := New(Options{
		Dir: s.dir, Spec: wire.Spec{ID: "orig", Engine: "script", Cwd: s.cwd, Scenario: scenarioFile(t, sc)},
		Engines: map[string]engine.Factory{"script": script.New},
		Mirror:  s.record,
		Rotate:  func(from, to string) { rotations = append(rotations, [2]string{from, to}) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.r = r
	t.Cleanup(func() { r.Close() })
	s.do(command.Send{Text: "one"})
	s.waitType(0, event.TurnEnded)
	var fr command.ForkResult
	if err := json.Unmarshal(s.do(command.ForkSession{}), &fr); err != nil {
		t.Fatal(err)
	}
	if fr.From != "orig" || fr.To == "" || len(rotations) != 1 || rotations[0] != [2]string{"orig", fr.To} {
		t.Fatalf("fork %+v, rotations %v", fr, rotations)
	}
	newDir := filepath.Join(filepath.Dir(s.dir), fr.To)
	if r.Dir() != newDir || r.Spec().ID != fr.To || r.Spec().Parent != "orig" {
		t.Fatalf("runner not moved: dir %s spec %+v", r.Dir(), r.Spec())
	}
	// The branch continues the script where it was.
	s.do(command.Send{Text: "two"})
	_, i := s.waitFor(0, "second answer", func(ev event.Event) bool {
		return ev.Type == event.AssistantText && strings.Contains(string(ev.Data), "second")
	})
	s.waitType(i, event.TurnEnded)
	r.Close()

	seqs := func(dir string) []int64 {
		var out []int64
		if err := readAll(filepath.Join(dir, EventsFile), func(ev event.Event) { out = append(out, ev.Seq) }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	oldSeqs, newSeqs := seqs(s.dir), seqs(newDir)
	if len(newSeqs) <= len(oldSeqs) {
		t.Fatalf("new log (%d events) does not extend the old (%d)", len(newSeqs), len(oldSeqs))
	}
	for i, q := range newSeqs {
		if q != int64(i+1) {
			t.Fatalf("new log seq %d at %d", q, i)
		}
	}
	// The original resumes on its own, with its own conversation.
	orig := &session{t: t, dir: s.dir, cwd: s.cwd}
	spec, _, _ := ReadSpec(s.dir)
	if spec.ID != "orig" || spec.EngineSession == r.Spec().EngineSession {
		t.Fatalf("original meta changed: %+v", spec)
	}
	orig.start(spec)
	ev, _ := orig.waitType(0, event.SessionResumed)
	if ev.Seq != oldSeqs[len(oldSeqs)-1]+1 {
		t.Fatalf("original resumed at seq %d", ev.Seq)
	}
}

func readAll(path string, fn func(event.Event)) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return scanEvents(f, fn)
}

// While a fork is under way every other command is refused: a message sent
// then would start a turn on the engine being replaced, and land in
// whichever log was current.
func TestCommandsAreRefusedWhileAForkIsUnderWay(t *testing.T) {
	forking, release := make(chan struct{}), make(chan struct{})
	var engines []*fakeEngine
	var mu sync.Mutex
	factory := func() engine.Engine {
		e := &fakeEngine{}
		mu.Lock()
		first := len(engines) == 0
		engines = append(engines, e)
		mu.Unlock()
		fe := forkingEngine{fakeEngine: e}
		if first {
			fe.fork = func(context.Context) error {
				close(forking)
				<-release
				return nil
			}
		}
		return fe
	}
	s := &session{t: t, dir: filepath.Join(t.TempDir(), "orig"), cwd: t.TempDir()}
	s.startFake(wire.Spec{ID: "orig", Cwd: s.cwd}, factory)
	s.do(command.Send{Text: "one"})
	s.waitType(0, event.TurnEnded)

	forked := make(chan *wire.Reply, 1)
	go func() { forked <- s.r.Do(context.Background(), command.ForkSession{}) }()
	<-forking
	for _, cmd := range []command.Request{
		command.Send{Text: "two"},
		command.SetMode{Mode: "auto"},
		command.SetGoal{Goal: "notes exist"},
	} {
		if reply := s.r.Do(context.Background(), cmd); reply.OK || reply.Error.Code != wire.CodeConflict {
			t.Errorf("%s during a fork: %+v", cmd.Cmd(), reply)
		}
	}
	if reply := s.r.Do(context.Background(), command.GetStatus{}); !reply.OK {
		t.Errorf("status during a fork: %+v", reply.Error)
	}
	close(release)
	if reply := <-forked; !reply.OK {
		t.Fatalf("fork: %+v", reply.Error)
	}
	s.do(command.Send{Text: "two"})
	_, i := s.waitFor(0, "the turn on two", func(e event.Event) bool {
		return e.Type == event.TurnStarted && decode[event.TurnStartedData](t, e).Text == "two"
	})
	s.waitType(i, event.TurnEnded)
	mu.Lock()
	defer mu.Unlock()
	if len(engines) != 2 || !slices.Equal(engines[0].ran(), []string{"one"}) || !slices.Equal(engines[1].ran(), []string{"two"}) {
		t.Fatalf("turns by engine: %d engines, the first ran %q", len(engines), engines[0].ran())
	}
	if st := s.r.Spec(); st.Mode != "review" || st.Goal != nil {
		t.Fatalf("a refused command changed the spec: %+v", st)
	}
}
