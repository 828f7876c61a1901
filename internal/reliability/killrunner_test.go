package reliability

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// killScenario answers every message with a turn of streamed text and two
// tool calls, some tens of milliseconds long: a kill lands anywhere in it.
const killScenario = `{"turns": [], "fallback": {"steps": [
  {"say": "working through it step by step", "chunks": 6, "delayMs": 2},
  {"tool": "read", "path": "notes.txt"},
  {"say": "and then some more streamed text", "chunks": 6, "delayMs": 2},
  {"tool": "read", "path": "notes.txt"},
  {"say": "done"}]}}`

// TestRunnerKill9AtRandomPoints sends a message, kills the session's runner
// with SIGKILL at a random point of the turn it starts, and does it again,
// while a follower reads the events as a shell would. Then a last message on
// a fresh runner, and the count: every acknowledged send is in the log once,
// every event the follower saw is in the log byte for byte, no seq repeats,
// and every turn is closed.
func TestRunnerKill9AtRandomPoints(t *testing.T) {
	kills := size(25, 1000)
	d := startDaemon(t, killScenario)
	id := d.create(t, "auto")
	f := follow(d, id)
	r := rand.New(rand.NewPCG(20, 1))
	var acked []string
	var firstRefusal error
	refused, killed := 0, 0
	// Each message is sent once, as a shell that does not retry would:
	// the supervisor sends it again to the next runner when the one it
	// reached dies (#20 §3), so none may be refused.
	send := func(text string) {
		if _, err := d.c.Command(ctx(t), id, command.Send{Text: text}); err != nil {
			refused++
			if firstRefusal == nil {
				firstRefusal = err
			}
			return
		}
		acked = append(acked, text)
	}
	for i := 0; i < kills; i++ {
		send(fmt.Sprintf("message %d", i))
		time.Sleep(time.Duration(r.IntN(50)) * time.Millisecond) // the random point
		if pid := d.runnerPID(id); pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
			killed++
		}
	}
	send("final")
	lc, err := waitQuiet(t, d, id)
	if err != nil {
		t.Fatalf("%v\n%s", err, d.Log())
	}
	f.end(lastSeq(lc))

	lostSends, twice := lc.sendsRecorded(acked)
	lostSeen := 0
	f.mu.Lock()
	for seq, line := range f.seen {
		if !bytes.Equal(lc.bySeq[seq], line) {
			lostSeen++
		}
	}
	seen, dupes := len(f.seen), f.dupes
	f.mu.Unlock()
	pass := refused == 0 && lostSends == 0 && twice == 0 && lostSeen == 0 && lc.repeated == 0 && lc.openTurns == 0 && dupes == 0
	report.Record(Figure{
		Scenario: "Runner kill -9 at random points of a turn",
		Done: fmt.Sprintf("%d kills (%d sends, each sent once, none retried by the client); %d events in the log, %d read live by a follower",
			killed, len(acked)+refused, len(lc.events), seen),
		Found: fmt.Sprintf("%d sends refused; %d acknowledged sends lost, %d recorded twice; %d events the follower saw missing from the log; %d seqs repeated, %d skipped; %d turns left open (%d closed as interrupted); %d torn tails repaired",
			refused, lostSends, twice, lostSeen, lc.repeated, lc.gaps, lc.openTurns, lc.interrupts, lc.repairs),
		Pass: pass,
	})
	if !pass {
		t.Fatalf("refused %d (first: %v), lost sends %d, twice %d, lost seen %d, repeated %d, open turns %d, follower dupes %d\n%s",
			refused, firstRefusal, lostSends, twice, lostSeen, lc.repeated, lc.openTurns, dupes, d.Log())
	}
}

// sendAcked sends text until the supervisor acknowledges it, and returns
// how many attempts were refused: a send can be refused while every live
// slot is busy. A refused send was not acknowledged, so it is not lost.
// It is safe to call from any goroutine.
func sendAcked(t *testing.T, d *daemon, id, text string) (int, error) {
	for refused := 0; ; refused++ {
		_, err := d.c.Command(ctx(t), id, command.Send{Text: text})
		if err == nil {
			return refused, nil
		}
		if refused > 1000 {
			return refused, fmt.Errorf("send %q refused %d times: %w", text, refused, err)
		}
		time.Sleep(5 * time.Millisecond) // a client's pause before it tries again
	}
}

// waitQuiet waits until the session's log holds a closed turn for every
// message and nothing more is being written, and returns the check of it.
// It is safe to call from any goroutine.
func waitQuiet(t *testing.T, d *daemon, id string) (*logCheck, error) {
	path := filepath.Join(d.sessionDir(id), "events.jsonl")
	deadline := time.Now().Add(2 * time.Minute)
	var prev int64 = -1
	for {
		lc, err := checkLog(path)
		if err != nil {
			return nil, err
		}
		s, err := d.c.Session(ctx(t), id)
		idle := err == nil && s.Status != nil && s.Status.State == wire.StateIdle && len(s.Status.Queued) == 0
		last := lastSeq(lc)
		if idle && lc.openTurns == 0 && last == prev {
			return lc, nil
		}
		prev = last
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("session %s did not settle: %d open turns, last seq %d", id, lc.openTurns, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func lastSeq(lc *logCheck) int64 {
	if len(lc.events) == 0 {
		return 0
	}
	return lc.events[len(lc.events)-1].Seq
}
