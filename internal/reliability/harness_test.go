package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/internal/smallfs"
	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// full is set by CORRAL_RELIABILITY=full (make reliability).
var full = os.Getenv("CORRAL_RELIABILITY") == "full"

// size picks a scenario's size: short in make test, full in make
// reliability.
func size(short, long int) int {
	if full {
		return long
	}
	return short
}

var report Report

func TestMain(m *testing.M) {
	code := m.Run()
	// A scenario on a small file system runs in a child process, which
	// hands its figure to the parent (onSmallFS) rather than report.
	if path := os.Getenv("CORRAL_RELIABILITY_REPORT"); path != "" && code == 0 && !smallfs.InChild() {
		sizeName, command := "short", "go test ./internal/reliability/"
		if full {
			sizeName, command = "full", "make reliability"
		}
		if err := WriteInto(path, report.Table(sizeName, command)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// childFigure names the file in which a scenario run in a child process
// (on a small file system) leaves its figure for the parent.
const childFigure = "CORRAL_RELIABILITY_CHILD_FIGURE"

// onSmallFS runs scenario on a fresh tmpfs of size bytes (smallfs: in a
// child process) and records the figure it returns in this process.
func onSmallFS(t *testing.T, size int64, scenario func(t *testing.T, root string) Figure) {
	t.Helper()
	if !smallfs.InChild() {
		t.Setenv(childFigure, filepath.Join(t.TempDir(), "figure.json"))
	}
	path := os.Getenv(childFigure)
	if root := smallfs.Dir(t, size); root != "" {
		raw, err := json.Marshal(scenario(t, root))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		return
	}
	if t.Skipped() || t.Failed() {
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the scenario left no figure: %v", err)
	}
	var f Figure
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	report.Record(f)
}

// daemon is a real `supervisor serve` on a fresh state folder, with a
// scenario for the script engine in its work folder.
type daemon struct {
	*testsupervisor.Supervisor
	c      *client.Client
	cwd    string
	runner string // the runner binary, to recognise its processes
}

func startDaemon(t testing.TB, scenario string) *daemon {
	t.Helper()
	return startDaemonOn(t, scenario, "")
}

// startDaemonOn is startDaemon with the state folder at state ("" for a
// fresh one).
func startDaemonOn(t testing.TB, scenario, state string) *daemon {
	t.Helper()
	// Warnings only: a full run's debug log would fill the memory.
	s := testsupervisor.Start(t, testsupervisor.Options{Args: []string{"--log-level", "warn"}, State: state})
	_, runner := testsupervisor.Binaries(t)
	d := &daemon{Supervisor: s, c: s.Client, cwd: s.Work, runner: runner}
	os.WriteFile(filepath.Join(d.cwd, "notes.txt"), []byte("some notes\n"), 0o600)
	if err := os.WriteFile(filepath.Join(d.cwd, "scenario.json"), []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

func (d *daemon) create(t testing.TB, mode string) string {
	t.Helper()
	s, err := d.c.CreateSession(ctx(t), wire.Spec{Engine: "script", Cwd: d.cwd, Mode: mode, Scenario: filepath.Join(d.cwd, "scenario.json")})
	if err != nil {
		t.Fatalf("create: %v\n%s", err, d.Log())
	}
	return s.ID
}

func (d *daemon) sessionDir(id string) string { return filepath.Join(d.State, "sessions", id) }

// runnerPID reads the pid of the session's live runner, 0 when none, or
// when the pid file outlived its runner and the pid now names another
// program: a reused pid is never killed.
func (d *daemon) runnerPID(id string) int {
	raw, err := os.ReadFile(filepath.Join(d.sessionDir(id), sessiondir.PidFile))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || exe != d.runner {
		return 0
	}
	return pid
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// logCheck is what a session's events.jsonl holds, checked line by line.
type logCheck struct {
	events     []event.Event
	bySeq      map[int64][]byte
	repeated   int // a seq not above the one before it
	gaps       int // seqs skipped without a logRepaired saying why
	repairs    int // logRepaired events
	openTurns  int // turnStarted without turnEnded
	userTexts  map[string]int
	turnEnds   int
	interrupts int
}

func checkLog(path string) (*logCheck, error) {
	lc := &logCheck{bySeq: map[int64][]byte{}, userTexts: map[string]int{}}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var prev int64
	open := map[int]bool{}
	err = eventlog.Scan(strings.NewReader(string(data)), 0, func(seq int64, line []byte) error {
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		switch {
		case seq <= prev:
			lc.repeated++
		case seq != prev+1 && ev.Type != event.LogRepaired:
			lc.gaps++
		}
		prev = seq
		lc.events = append(lc.events, ev)
		lc.bySeq[seq] = append([]byte(nil), line...)
		switch ev.Type {
		case event.LogRepaired:
			lc.repairs++
		case event.UserMessage:
			var m event.UserMessageData
			json.Unmarshal(ev.Data, &m)
			lc.userTexts[m.Text]++
		case event.TurnStarted:
			var ts event.TurnStartedData
			json.Unmarshal(ev.Data, &ts)
			open[ts.Turn] = true
		case event.TurnEnded:
			var te event.TurnEndedData
			json.Unmarshal(ev.Data, &te)
			delete(open, te.Turn)
			lc.turnEnds++
			if te.Outcome == "interrupted" {
				lc.interrupts++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	lc.openTurns = len(open)
	return lc, nil
}

// sendsRecorded counts the acknowledged sends (by text) the log lacks, and
// those it records more than once.
func (lc *logCheck) sendsRecorded(acked []string) (missing, twice int) {
	for _, text := range acked {
		switch lc.userTexts[text] {
		case 0:
			missing++
		case 1:
		default:
			twice++
		}
	}
	return missing, twice
}

// follower reads a session's events as a shell does, reconnecting from the
// next seq whenever the stream ends, and keeps every line it saw.
type follower struct {
	done chan struct{}
	stop context.CancelFunc

	mu    sync.Mutex
	seen  map[int64][]byte
	last  int64
	dupes int // a seq seen twice
}

func follow(d *daemon, id string) *follower {
	c, cancel := context.WithCancel(context.Background())
	f := &follower{seen: map[int64][]byte{}, done: make(chan struct{}), stop: cancel}
	go func() {
		defer close(f.done)
		for c.Err() == nil {
			f.mu.Lock()
			from := f.last + 1
			f.mu.Unlock()
			st, err := d.c.Events(c, id, client.EventsOptions{From: from, Follow: true})
			if err != nil {
				select {
				case <-c.Done():
					return
				case <-time.After(20 * time.Millisecond):
				}
				continue
			}
			for {
				line, err := st.Next()
				if err != nil {
					break
				}
				var head struct{ Seq int64 }
				if json.Unmarshal(line, &head) != nil {
					continue
				}
				f.mu.Lock()
				if _, ok := f.seen[head.Seq]; ok {
					f.dupes++
				}
				f.seen[head.Seq] = append([]byte(nil), line...)
				f.last = max(f.last, head.Seq)
				f.mu.Unlock()
			}
			st.Close()
		}
	}()
	return f
}

// end stops the follower once it has seen seq last (or after a minute).
func (f *follower) end(last int64) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		f.mu.Lock()
		got := f.last
		f.mu.Unlock()
		if got >= last {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f.stop()
	<-f.done
}
