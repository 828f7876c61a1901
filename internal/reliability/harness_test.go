package reliability

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/pkg/client"
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

// bins holds the supervisor and runner binaries built for this run.
var bins struct{ dir, supervisor, runner string }

func TestMain(m *testing.M) {
	code := run(m)
	os.Exit(code)
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "corral-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bins.dir = dir
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator),
		"github.com/corral-dev/corral/cmd/supervisor", "github.com/corral-dev/corral/cmd/runner")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the binaries: %v\n%s", err, out)
		return 1
	}
	bins.supervisor, bins.runner = filepath.Join(dir, "supervisor"), filepath.Join(dir, "runner")
	code := m.Run()
	if path := os.Getenv("CORRAL_RELIABILITY_REPORT"); path != "" && code == 0 {
		sizeName, command := "short", "go test ./internal/reliability/"
		if full {
			sizeName, command = "full", "make reliability"
		}
		if err := WriteInto(path, report.Table(sizeName, command)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return code
}

// daemon is a running `supervisor serve` on a fresh state folder.
type daemon struct {
	t      testing.TB
	state  string
	cwd    string
	cmd    *exec.Cmd
	c      *client.Client
	log    *testio.Buffer
	exited chan struct{}
}

func startDaemon(t testing.TB, scenario string, extra ...string) *daemon {
	t.Helper()
	base := t.TempDir()
	d := &daemon{t: t, state: filepath.Join(base, "state"), cwd: filepath.Join(base, "work"), log: &testio.Buffer{}, exited: make(chan struct{})}
	if err := os.Mkdir(d.cwd, 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.cwd, "notes.txt"), []byte("some notes\n"), 0o600)
	if err := os.WriteFile(filepath.Join(d.cwd, "scenario.json"), []byte(scenario), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--state", d.state, "--runner", bins.runner, "--log-level", "warn"}, extra...)
	d.cmd = exec.Command(bins.supervisor, args...)
	d.cmd.Stderr = d.log
	proc.Configure(d.cmd)
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(d.stop)
	var err error
	if d.c, err = client.ForState(d.state); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := d.c.Health(context.Background()); err == nil {
			return d
		}
		select {
		case <-d.exited:
			t.Fatalf("the supervisor exited at start:\n%s", d.log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the supervisor did not answer within a minute:\n%s", d.log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the supervisor with SIGTERM, as a service manager would.
func (d *daemon) stop() {
	select {
	case <-d.exited:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(30 * time.Second):
		proc.KillGroup(d.cmd.Process.Pid)
		<-d.exited
	}
}

func (d *daemon) create(t testing.TB, mode string) string {
	t.Helper()
	s, err := d.c.CreateSession(ctx(t), wire.Spec{Engine: "script", Cwd: d.cwd, Mode: mode, Scenario: filepath.Join(d.cwd, "scenario.json")})
	if err != nil {
		t.Fatalf("create: %v\n%s", err, d.log.String())
	}
	return s.ID
}

func (d *daemon) sessionDir(id string) string { return filepath.Join(d.state, "sessions", id) }

// runnerPID reads the pid of the session's live runner, 0 when none.
func (d *daemon) runnerPID(id string) int {
	raw, err := os.ReadFile(filepath.Join(d.sessionDir(id), sessiondir.PidFile))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return pid
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return c
}

// logCheck is what a session's events.jsonl holds, checked line by line.
type logCheck struct {
	events     []wire.Event
	bySeq      map[int64][]byte
	repeated   int // a seq not above the one before it
	gaps       int // seqs skipped without a logRepaired saying why
	repairs    int // logRepaired events
	openTurns  int // turnStarted without turnEnded
	userTexts  map[string]int
	turnEnds   int
	interrupts int
}

func checkLog(t testing.TB, path string) *logCheck {
	t.Helper()
	lc := &logCheck{bySeq: map[int64][]byte{}, userTexts: map[string]int{}}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var prev int64
	open := map[int]bool{}
	err = eventlog.Scan(strings.NewReader(string(data)), 0, func(seq int64, line []byte) error {
		var ev wire.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return err
		}
		switch {
		case seq <= prev:
			lc.repeated++
		case seq != prev+1 && ev.Type != wire.EvLogRepaired:
			lc.gaps++
		}
		prev = seq
		lc.events = append(lc.events, ev)
		lc.bySeq[seq] = append([]byte(nil), line...)
		switch ev.Type {
		case wire.EvLogRepaired:
			lc.repairs++
		case wire.EvUserMessage:
			var m wire.UserMessageData
			json.Unmarshal(ev.Data, &m)
			lc.userTexts[m.Text]++
		case wire.EvTurnStarted:
			var ts wire.TurnStartedData
			json.Unmarshal(ev.Data, &ts)
			open[ts.Turn] = true
		case wire.EvTurnEnded:
			var te wire.TurnEndedData
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
		t.Fatal(err)
	}
	lc.openTurns = len(open)
	return lc
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
