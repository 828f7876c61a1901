package reliability

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
)

// restartScenario answers every message with a turn that streams text,
// reads a file, streams more and then writes a file, which review mode
// holds for a person: the turn is in flight until the test decides the
// hunk, however fast or slow the machine is.
const restartScenario = `{"turns": [], "fallback": {"steps": [
  {"say": "working through it step by step", "chunks": 8, "delayMs": 5},
  {"tool": "read", "path": "notes.txt"},
  {"say": "and then some more streamed text", "chunks": 8, "delayMs": 5},
  {"tool": "write", "path": "held.txt", "content": "held for review\n"},
  {"say": "done"}]}}`

// startKeepingDaemon is startDaemon with sessions that outlive the
// supervisor for grace.
func startKeepingDaemon(t testing.TB, scenario string, grace time.Duration) *daemon {
	t.Helper()
	s := testsupervisor.Start(t, testsupervisor.Options{Args: []string{"--log-level", "warn"}, RunnerGrace: grace})
	_, runner := testsupervisor.Binaries(t)
	d := &daemon{Supervisor: s, c: s.Client, cwd: s.Work, runner: runner}
	os.WriteFile(filepath.Join(d.cwd, "notes.txt"), []byte("some notes\n"), 0o600)
	if err := os.WriteFile(filepath.Join(d.cwd, "scenario.json"), []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSupervisorRestartWithTurnsInFlight sends a message to every session,
// then at a random moment of the turns it starts (streaming, or held for
// review) kills the supervisor with SIGKILL or stops it with SIGTERM, and
// starts a new one on the same state folder; again and again, while a
// follower per session reads its events over the API. Each round's turns
// are then finished through the new supervisor (their hunk rejected, so
// the next round's write is held again). Counted: runners the new
// supervisor re-attached to (every one: each session has a turn in flight),
// interrupted turns, acknowledged sends missing or twice, events the
// followers saw twice or that the log lacks, seqs repeated or skipped, and
// runner processes left once the last supervisor stopped.
func TestSupervisorRestartWithTurnsInFlight(t *testing.T) {
	sessions, rounds := size(3, 10), size(4, 50)
	d := startKeepingDaemon(t, restartScenario, 2*time.Minute)
	ids := make([]string, sessions)
	followers := make([]*follower, sessions)
	for i := range ids {
		ids[i] = d.create(t, "review")
		followers[i] = follow(d, ids[i])
	}
	r := rand.New(rand.NewPCG(20, 4))
	var acked []string
	refused, reattached, inFlight, kills, terms := 0, 0, 0, 0, 0
	for round := 0; round < rounds; round++ {
		for _, id := range ids {
			text := fmt.Sprintf("%s round %d", id, round)
			n, err := sendAcked(t, d, id, text)
			if err != nil {
				t.Fatalf("%v\n%s", err, d.Log())
			}
			refused += n
			acked = append(acked, text)
		}
		time.Sleep(time.Duration(r.IntN(150)) * time.Millisecond) // the random point
		before := map[string]int{}
		for _, id := range ids {
			before[id] = d.runnerPID(id)
			inFlight++
		}
		if round%2 == 0 {
			d.Kill()
			kills++
		} else {
			d.Stop()
			terms++
		}
		d.Restart()
		for _, id := range ids {
			if pid := d.runnerPID(id); pid != 0 && pid == before[id] {
				reattached++
			}
		}
		// Finish the round's turns through the new supervisor.
		for _, id := range ids {
			edit, err := waitStaged(d, id, round+1)
			if err != nil {
				t.Fatalf("%v\n%s", err, d.Log())
			}
			if _, err := d.c.Command(ctx(t), id, command.DecideHunk{EditID: edit, HunkID: "h1", Decision: command.DecisionReject}); err != nil {
				t.Fatalf("reject %s of %s: %v\n%s", edit, id, err, d.Log())
			}
		}
	}

	lostSends, twice, lostSeen, dupes, unseen, interrupted, repeated, gaps, open := 0, 0, 0, 0, 0, 0, 0, 0, 0
	events := 0
	texts := map[string]int{}
	for i, id := range ids {
		lc, err := waitQuiet(t, d, id)
		if err != nil {
			t.Fatalf("%v\n%s", err, d.Log())
		}
		f := followers[i]
		f.end(lastSeq(lc))
		for text, n := range lc.userTexts {
			texts[text] += n
		}
		events += len(lc.events)
		interrupted += lc.interrupts
		repeated += lc.repeated
		gaps += lc.gaps
		open += lc.openTurns
		f.mu.Lock()
		for seq, line := range f.seen {
			if !bytes.Equal(lc.bySeq[seq], line) {
				lostSeen++
			}
		}
		for seq := range lc.bySeq {
			if _, ok := f.seen[seq]; !ok {
				unseen++
			}
		}
		dupes += f.dupes
		f.mu.Unlock()
	}
	for _, text := range acked {
		switch texts[text] {
		case 0:
			lostSends++
		case 1:
		default:
			twice++
		}
	}
	d.Stop()
	orphans := waitNoRunners(d)

	pass := reattached == inFlight && interrupted == 0 && lostSends == 0 && twice == 0 && lostSeen == 0 &&
		unseen == 0 && dupes == 0 && repeated == 0 && gaps == 0 && open == 0 && orphans == 0
	report.Record(Figure{
		Scenario: "Supervisor kill -9 and SIGTERM with turns in flight",
		Done: fmt.Sprintf("%d restarts (%d after kill -9, %d after SIGTERM) of a supervisor with %d sessions, each with a turn in flight: %d turns, %d sends acknowledged (%d refused while no supervisor ran, and retried); %d events in the logs",
			kills+terms, kills, terms, sessions, inFlight, len(acked), refused, events),
		Found: fmt.Sprintf("%d of %d runners re-attached; %d turns interrupted; %d acknowledged sends lost, %d recorded twice; %d events the followers saw missing from the log, %d in the log they never saw, %d seen twice; %d seqs repeated, %d skipped; %d turns left open; %d runner processes left after the last supervisor stopped",
			reattached, inFlight, interrupted, lostSends, twice, lostSeen, unseen, dupes, repeated, gaps, open, orphans),
		Pass: pass,
	})
	if !pass {
		t.Fatalf("re-attached %d of %d, interrupted %d, lost sends %d, twice %d, lost seen %d, unseen %d, dupes %d, repeated %d, gaps %d, open %d, orphans %d\n%s",
			reattached, inFlight, interrupted, lostSends, twice, lostSeen, unseen, dupes, repeated, gaps, open, orphans, d.Log())
	}
}

// TestRunnerWithoutSupervisorStopsAfterGrace kills the supervisor of a
// session whose turn waits for review, and starts none: the runner waits
// out its grace, then stops as on SIGTERM (its turn closed), and nothing
// of its process group is left. A supervisor started afterwards finds the
// session whole.
func TestRunnerWithoutSupervisorStopsAfterGrace(t *testing.T) {
	const grace = 2 * time.Second
	d := startKeepingDaemon(t, restartScenario, grace)
	id := d.create(t, "review")
	if _, err := sendAcked(t, d, id, "held"); err != nil {
		t.Fatal(err)
	}
	if _, err := waitStaged(d, id, 1); err != nil {
		t.Fatal(err)
	}
	pid := d.runnerPID(id)
	if pid == 0 {
		t.Fatal("no runner")
	}
	d.Kill()
	killed := time.Now()
	if !testsupervisor.WaitGone(pid, time.Minute) {
		t.Fatalf("runner %d still runs a minute after its supervisor died (grace %s)", pid, grace)
	}
	if waited := time.Since(killed); waited < grace {
		t.Fatalf("runner stopped %s after its supervisor died, before its grace of %s", waited, grace)
	}
	if n := groupMembers(pid); n > 0 {
		t.Fatalf("%d processes of the runner's group outlived it", n)
	}
	lc, err := checkLog(filepath.Join(d.sessionDir(id), "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if lc.openTurns != 0 || lc.repeated != 0 || lc.gaps != 0 {
		t.Fatalf("log after the runner stopped: %d open turns, %d repeated, %d gaps", lc.openTurns, lc.repeated, lc.gaps)
	}
	d.Restart()
	if _, err := sendAcked(t, d, id, "after"); err != nil {
		t.Fatalf("%v\n%s", err, d.Log())
	}
	if _, err := waitStaged(d, id, 2); err != nil {
		t.Fatalf("%v\n%s", err, d.Log())
	}
}

// waitStaged waits until session id's log holds n hunkStaged events and
// returns the last one's edit id.
func waitStaged(d *daemon, id string, n int) (string, error) {
	path := filepath.Join(d.sessionDir(id), "events.jsonl")
	deadline := time.Now().Add(2 * time.Minute)
	for {
		lc, err := checkLog(path)
		if err != nil {
			return "", err
		}
		got, edit := 0, ""
		for _, ev := range lc.events {
			if ev.Type == event.HunkStaged {
				got++
				var h event.HunkStagedData
				json.Unmarshal(ev.Data, &h)
				edit = h.EditID
			}
		}
		if got >= n {
			return edit, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("session %s: %d hunks staged, want %d", id, got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitNoRunners waits up to a minute for every runner of d's state folder
// to end, and returns how many did not.
func waitNoRunners(d *daemon) int {
	deadline := time.Now().Add(time.Minute)
	for {
		left := testsupervisor.Runners(d.runner, d.State)
		if len(left) == 0 || time.Now().After(deadline) {
			return len(left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// groupMembers counts live processes of process group pgid.
func groupMembers(pgid int) int {
	des, _ := os.ReadDir("/proc")
	n := 0
	for _, de := range des {
		pid, err := strconv.Atoi(de.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid && !testsupervisor.Gone(pid) {
			n++
		}
	}
	return n
}
