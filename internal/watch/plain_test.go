package watch

import (
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// plainRun is runPlain over a fake supervisor with typed input.
type plainRun struct {
	src            *fakeSource
	snd            *fakeSender
	typed          *io.PipeWriter
	stdout, stderr *testio.Buffer
	done           chan error
	cancel         context.CancelFunc
}

func startPlain(t *testing.T, cfg config, src *fakeSource, snd *fakeSender) *plainRun {
	t.Helper()
	in, typed := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	r := &plainRun{src: src, snd: snd, typed: typed, stdout: &testio.Buffer{}, stderr: &testio.Buffer{}, done: make(chan error, 1), cancel: cancel}
	cfg.plain, cfg.retry = true, 20*time.Millisecond
	var stdin io.Reader
	if cfg.interactive {
		stdin = in
	}
	go func() { r.done <- run(ctx, cfg, src, snd, stdin, r.stdout, r.stderr) }()
	t.Cleanup(func() {
		cancel()
		typed.Close()
		<-r.done
	})
	return r
}

func (r *plainRun) typeLine(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.typed, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (r *plainRun) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("watch did not end")
	}
	return nil
}

// reviewTurn opens a turn that asks to run uptime.
func reviewTurn() []ev {
	return []ev{
		{"sessionStarted", `{"engine":"script","cwd":"/home/me/project","mode":"review"}`},
		{"userMessage", `{"id":"m1","text":"go","kind":"send"}`},
		{"turnStarted", `{"turn":1,"messageId":"m1","text":"go"}`},
		{"toolStarted", `{"toolId":"t1","tool":"Bash","kind":"shell","summary":"uptime","command":"uptime"}`},
		{"askOpened", askA1},
	}
}

// runnerReactions plays the runner's part: each decision becomes its
// event, and allowing the ask stages a three-hunk edit.
func runnerReactions(req Request) ([]ev, error) {
	switch c := req.Cmd.(type) {
	case command.Answer:
		out := []ev{{"askAnswered", `{"askId":"` + c.AskID + `","decision":"` + c.Decision + `","note":"` + c.Note + `","by":"user"}`}}
		if c.Decision == command.DecisionAllow {
			out = append(out,
				ev{"toolFinished", `{"toolId":"t1","tool":"Bash","outcome":"ok","durationMs":3,"exitCode":0}`},
				ev{"toolStarted", `{"toolId":"t3","tool":"Write","kind":"edit","summary":"Write notes.txt","path":"notes.txt"}`},
				ev{"hunkStaged", threeHunk})
		}
		return out, nil
	case command.DecideHunk:
		return []ev{{"hunkDecided", `{"editId":"` + c.EditID + `","hunkId":"` + c.HunkID + `","decision":"` + c.Decision + `","note":"` + c.Note + `","by":"user"}`}}, nil
	}
	return nil, nil
}

func TestPlainWatchAnswersAnAskAndReviewsHunksFromTypedLines(t *testing.T) {
	src := newFakeSource()
	src.add("s1", reviewTurn()...)
	snd := &fakeSender{src: src, react: runnerReactions}
	r := startPlain(t, config{Options: Options{Session: "s1", Follow: true}, interactive: true}, src, snd)

	waitFor(t, r.stderr, "? a1 run `uptime`? y allow · n deny")
	r.typeLine(t, "y")
	waitFor(t, r.stdout, "    allowed\n")
	waitFor(t, r.stderr, "? notes.txt e3/h1 (1 of 3): y accept")
	r.typeLine(t, "y")
	waitFor(t, r.stderr, "? notes.txt e3/h2 (2 of 3)")
	r.typeLine(t, "d keep the rest as it was")
	waitFor(t, r.stdout, "h3 rejected — keep the rest as it was\n")
	r.typeLine(t, "q")
	if err := r.wait(t); err != nil {
		t.Fatalf("watch ended with %v", err)
	}

	var got []string
	for _, req := range snd.sent() {
		c := flat(req.Cmd)
		got = append(got, string(c.Cmd)+" "+c.AskID+c.EditID+"/"+c.HunkID+" "+c.Decision+" "+c.Note)
	}
	want := []string{
		"answer a1/ allow ",
		"decideHunk e3/h1 accept ",
		"decideHunk e3/h2 reject keep the rest as it was",
		"decideHunk e3/h3 reject keep the rest as it was",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("commands\n%q\nwant\n%q", got, want)
	}
	for _, line := range []string{"    h1 accepted\n", "    h2 rejected — keep the rest as it was\n"} {
		if !strings.Contains(r.stdout.String(), line) {
			t.Errorf("transcript lacks %q:\n%s", line, r.stdout)
		}
	}
	if strings.Contains(r.stdout.String(), "another shell") {
		t.Errorf("decisions made here were reported as made elsewhere:\n%s", r.stdout)
	}
}

func TestPlainWatchDropsAPromptAnsweredElsewhere(t *testing.T) {
	src := newFakeSource()
	src.add("s1", reviewTurn()...)
	snd := &fakeSender{src: src}
	r := startPlain(t, config{Options: Options{Session: "s1", Follow: true}, interactive: true}, src, snd)

	waitFor(t, r.stderr, "? a1 run `uptime`?")
	src.add("s1", ev{"askAnswered", `{"askId":"a1","decision":"deny","note":"not today","by":"user"}`})
	waitFor(t, r.stdout, "    denied — not today\n    (answered in another shell first)\n")
	r.typeLine(t, "y")
	waitFor(t, r.stderr, "nothing is waiting for a decision")
	if sent := snd.sent(); len(sent) != 0 {
		t.Errorf("sent %+v for a prompt answered elsewhere", sent)
	}
}

func TestPlainWatchReportsADecisionThatLostTheRace(t *testing.T) {
	src := newFakeSource()
	src.add("s1", reviewTurn()...)
	snd := &fakeSender{src: src, react: func(Request) ([]ev, error) {
		return nil, wire.Errorf(wire.CodeConflict, "ask a1 was already answered")
	}}
	r := startPlain(t, config{Options: Options{Session: "s1", Follow: true}, interactive: true}, src, snd)
	waitFor(t, r.stderr, "? a1 run `uptime`?")
	r.typeLine(t, "n")
	waitFor(t, r.stderr, "watch: ask a1 was already decided elsewhere (ask a1 was already answered)")
}

func TestPlainWatchSteersSendsAndStopsTheSession(t *testing.T) {
	src := newFakeSource()
	src.add("s1", reviewTurn()[:3]...)
	snd := &fakeSender{src: src}
	r := startPlain(t, config{Options: Options{Session: "s1", Follow: true}, interactive: true}, src, snd)
	waitFor(t, r.stdout, "› go\n")
	r.typeLine(t, "s keep it short")
	r.typeLine(t, "m then run the tests")
	r.typeLine(t, "x")
	r.typeLine(t, "s")
	r.typeLine(t, "q")
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{Session: "s1", Cmd: command.Steer{Text: "keep it short"}},
		{Session: "s1", Cmd: command.Send{Text: "then run the tests"}},
		{Session: "s1", Cmd: command.Stop{}},
	}
	// The run has ended, and its dispatcher sends what is queued before
	// it does: there is nothing left to wait for.
	if got := snd.sent(); !reflect.DeepEqual(got, want) {
		t.Errorf("commands %+v, want %+v; stderr:\n%s", got, want, r.stderr)
	}
	if !strings.Contains(r.stderr.String(), "steer what?") {
		t.Errorf("an empty steer was not explained:\n%s", r.stderr)
	}
}

func TestPlainWatchWithoutInputPrintsTheLogAndEnds(t *testing.T) {
	src := newFakeSource()
	src.add("s1", reviewTurn()...)
	r := startPlain(t, config{Options: Options{Session: "s1", Follow: false}}, src, &fakeSender{src: src})
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
	want := "● session s1 · script engine · review mode · /home/me/project\n› go\n  ▸ uptime\n  ? asks to run `uptime` — not on the allowlist · a1\n"
	if got := r.stdout.String(); got != want {
		t.Errorf("stdout\n%q\nwant\n%q", got, want)
	}
	if r.stderr.String() != "" {
		t.Errorf("a watch without input prompted:\n%s", r.stderr)
	}
}

func TestPlainWatchOfEverySessionPrefixesLines(t *testing.T) {
	src := newFakeSource()
	src.add("aaaa1111", reviewTurn()...)
	src.add("bbbb2222", reviewTurn()[:2]...)
	r := startPlain(t, config{Options: Options{Follow: true}, interactive: true}, src, &fakeSender{src: src})
	// Logged events are summed up, and an open ask is still prompted.
	waitFor(t, r.stdout, "aaaa │ ● session aaaa1111 · script engine · review mode · 5 earlier events not shown (--from 1 shows them)\n")
	waitFor(t, r.stderr, "aaaa │ ? a1 run `uptime`?")
	// Events added while the feed still reads a session's backlog are part
	// of it, and hidden like the rest: add only once it has been read.
	waitFor(t, r.stdout, "bbbb │ ● session bbbb2222")
	src.add("bbbb2222", ev{"turnStarted", `{"turn":1,"messageId":"m1","text":"go"}`}, ev{"assistantText", `{"text":"hello"}`})
	waitFor(t, r.stdout, "bbbb │ hello\n")
}

func TestPlainWatchOfAnUnknownSessionFails(t *testing.T) {
	src := newFakeSource()
	r := startPlain(t, config{Options: Options{Session: "nope", Follow: true}}, src, &fakeSender{src: src})
	err := r.wait(t)
	if err == nil || !strings.Contains(err.Error(), "session nope") {
		t.Errorf("error %v, want one naming the session", err)
	}
}

func TestPlainWatchFromASeqSumsUpWhatItSkips(t *testing.T) {
	src := newFakeSource()
	src.add("s1", reviewTurn()...)
	r := startPlain(t, config{Options: Options{Session: "s1", From: 4, Follow: false}}, src, &fakeSender{src: src})
	if err := r.wait(t); err != nil {
		t.Fatal(err)
	}
	want := "● session s1 · script engine · review mode · 3 earlier events not shown (--from 1 shows them)\n" +
		"  ▸ uptime\n  ? asks to run `uptime` — not on the allowlist · a1\n"
	if got := r.stdout.String(); got != want {
		t.Errorf("stdout\n%q\nwant\n%q", got, want)
	}
}
