package store

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"go.uber.org/goleak"
)

// childEnv makes the test binary a child process of a multi-process test:
// its value says what the child does (see childMain).
const childEnv = "GRAPH_STORE_CHILD"

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(childMain(mode))
	}
	goleak.VerifyTestMain(m)
}

func newRun(t testing.TB, s *Store, id string) {
	t.Helper()
	r, err := graph.New(graph.OpenOptions{ID: id, Request: "count", Cwd: "/w", Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func openStore(t testing.TB, o Options) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func code(err error) graph.Code { return graph.CodeOf(err) }

func TestCreateLoadUpdate(t *testing.T) {
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	r, err := s.Load("r1")
	if err != nil {
		t.Fatal(err)
	}
	if r.Rev != 1 || r.Node("plan") == nil {
		t.Fatalf("loaded rev %d, plan %v", r.Rev, r.Node("plan"))
	}
	r2, err := graph.New(graph.OpenOptions{ID: "r1", Request: "again", Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(context.Background(), r2); code(err) != graph.CodeRunExists {
		t.Fatalf("second create: %v, want run_exists", err)
	}
	got, err := s.Update(context.Background(), "r1", func(r *graph.Run) error {
		r.Emit("test", "", nil)
		return nil
	})
	if err != nil || got.Rev != 2 {
		t.Fatalf("update: rev %v, %v", got, err)
	}
	events, off, err := s.EventsFrom("r1", 0)
	if err != nil || len(events) != 2 || events[0].Type != graph.EvRunOpened || events[1].Seq != 2 {
		t.Fatalf("events %+v (%v)", events, err)
	}
	more, off2, _ := s.EventsFrom("r1", off)
	if len(more) != 0 || off2 != off {
		t.Fatalf("reading from the end gave %d events", len(more))
	}
	for _, id := range []string{"nope", "../r1", ""} {
		if _, err := s.Load(id); code(err) != graph.CodeUnknownRun {
			t.Errorf("load %q: %v, want unknown_run", id, err)
		}
		if _, err := s.Update(context.Background(), id, func(*graph.Run) error { return nil }); code(err) != graph.CodeUnknownRun {
			t.Errorf("update %q: %v, want unknown_run", id, err)
		}
	}
}

func TestAFailedChangeWritesNothingUnlessItRecordedSomething(t *testing.T) {
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	boom := errors.New("boom")
	if _, err := s.Update(context.Background(), "r1", func(*graph.Run) error { return boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if r, _ := s.Load("r1"); r.Rev != 1 {
		t.Fatalf("a failed change was written: rev %d", r.Rev)
	}
	_, err := s.Update(context.Background(), "r1", func(r *graph.Run) error {
		r.Emit(graph.EvResultSuperseded, "plan", nil)
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if r, _ := s.Load("r1"); r.Rev != 2 {
		t.Fatalf("a recorded refusal was not written: rev %d", r.Rev)
	}
}

func TestDamagedAndNewerRunFilesGetTypedErrors(t *testing.T) {
	s := openStore(t, Options{})
	for name, tc := range map[string]struct {
		content string
		want    graph.Code
	}{
		"torn":      {`{"version":1,"id":"r","nod`, graph.CodeStoreDamaged},
		"not json":  {"\x00\x01", graph.CodeStoreDamaged},
		"newer":     {`{"version":99,"id":"r"}`, graph.CodeStoreVersion},
		"other run": {`{"version":1,"id":"other","nodes":[]}`, graph.CodeStoreDamaged},
	} {
		t.Run(name, func(t *testing.T) {
			dir := s.Dir("r")
			os.MkdirAll(dir, 0o700)
			if err := os.WriteFile(filepath.Join(dir, runFile), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Load("r"); code(err) != tc.want {
				t.Fatalf("load: %v, want %s", err, tc.want)
			}
			if _, err := s.Update(context.Background(), "r", func(*graph.Run) error { return nil }); code(err) != tc.want {
				t.Fatalf("update: %v, want %s", err, tc.want)
			}
		})
	}
}

func TestATornEventLineIsCutBeforeTheNextAppend(t *testing.T) {
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	f, err := os.OpenFile(filepath.Join(s.Dir("r1"), eventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"seq":2,"type":"torn`)
	f.Close()
	events, _, _ := s.EventsFrom("r1", 0)
	if len(events) != 1 {
		t.Fatalf("a torn line was read as an event: %+v", events)
	}
	s.Update(context.Background(), "r1", func(r *graph.Run) error { r.Emit("after", "", nil); return nil })
	events, _, _ = s.EventsFrom("r1", 0)
	if len(events) != 2 || events[1].Type != "after" {
		t.Fatalf("events after the repair: %+v", events)
	}
}

// A crash between writing run.json and appending the change's events
// loses no event: the next change appends them before its own.
func TestEventsACrashKeptOutOfTheFileComeWithTheNextChange(t *testing.T) {
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	path := filepath.Join(s.Dir("r1"), eventsFile)
	before, _ := os.ReadFile(path)
	if _, err := s.Update(context.Background(), "r1", func(r *graph.Run) error {
		r.Emit("lost", "", nil)
		r.Emit("lost too", "", nil)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// As if the process died after the rename: the file lacks the change.
	if err := os.WriteFile(path, before, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(context.Background(), "r1", func(r *graph.Run) error { r.Emit("next", "", nil); return nil }); err != nil {
		t.Fatal(err)
	}
	events, _, _ := s.EventsFrom("r1", 0)
	var types []string
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		types = append(types, e.Type)
	}
	if want := []string{graph.EvRunOpened, "lost", "lost too", "next"}; strings.Join(types, ",") != strings.Join(want, ",") {
		t.Fatalf("events %v, want %v", types, want)
	}
}

func TestReadersNeverSeeHalfAFile(t *testing.T) {
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := s.Load("r1"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range 100 {
		if _, err := s.Update(context.Background(), "r1", func(r *graph.Run) error {
			r.Request = strings.Repeat("x", 1000+i*200)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a reader failed: %v", err)
	}
}

// A lock held by a live owner is never taken: the wait ends in
// lock_timeout after the timeout, measured on the monotonic clock.
func TestALiveOwnersLockIsNeverTaken(t *testing.T) {
	s := openStore(t, Options{LockTimeout: 200 * time.Millisecond})
	newRun(t, s, "r1")
	held, err := acquire(context.Background(), filepath.Join(s.Dir("r1"), lockFile), s.proc, s.clock, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer held.release()
	begin := time.Now()
	_, err = s.Update(context.Background(), "r1", func(*graph.Run) error { return nil })
	if code(err) != graph.CodeLockTimeout {
		t.Fatalf("update under a live lock: %v, want lock_timeout", err)
	}
	if waited := time.Since(begin); waited < 200*time.Millisecond {
		t.Fatalf("gave up after %s, before the 200ms timeout", waited)
	}
}

// jumpingClock's wall time jumps by a large step at every reading while
// its monotonic reading runs true.
type jumpingClock struct {
	Clock
	step time.Duration
	mu   sync.Mutex
	wall time.Time
}

func (c *jumpingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.wall = c.wall.Add(c.step)
	return c.wall
}

func TestAWallClockJumpNeitherEndsNorStretchesALockWait(t *testing.T) {
	for _, step := range []time.Duration{2 * time.Hour, -2 * time.Hour} {
		t.Run(step.String(), func(t *testing.T) {
			clock := &jumpingClock{Clock: SystemClock(), step: step, wall: time.Now()}
			s := openStore(t, Options{Clock: clock, LockTimeout: 300 * time.Millisecond})
			newRun(t, s, "r1")
			held, err := acquire(context.Background(), filepath.Join(s.Dir("r1"), lockFile), s.proc, SystemClock(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer held.release()
			// The wall clock jumps while the change waits.
			stopJumping := make(chan struct{})
			jumped := make(chan struct{})
			go func() {
				defer close(jumped)
				for {
					select {
					case <-stopJumping:
						return
					default:
						clock.Now()
						time.Sleep(time.Millisecond)
					}
				}
			}()
			begin := time.Now()
			_, err = s.Update(context.Background(), "r1", func(*graph.Run) error { return nil })
			waited := time.Since(begin)
			close(stopJumping)
			<-jumped
			if code(err) != graph.CodeLockTimeout {
				t.Fatalf("update: %v, want lock_timeout", err)
			}
			if waited < 300*time.Millisecond {
				t.Fatalf("the wait ended after %s, before its 300ms: the wall-clock jump cut it short", waited)
			}
			if waited > 30*time.Second {
				t.Fatalf("the wait lasted %s: the wall-clock jump stretched it", waited)
			}
		})
	}
}

func deadPID(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func writeLock(t testing.TB, path string, tk graph.Ticket) {
	t.Helper()
	raw, _ := json.Marshal(tk)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestADeadOwnersLockIsBroken(t *testing.T) {
	for name, lockContent := range map[string]func(s *Store) []byte{
		"dead pid": func(s *Store) []byte {
			raw, _ := json.Marshal(graph.Ticket{PID: deadPID(t), Boot: s.proc.Boot(), Nonce: "aa11"})
			return raw
		},
		"another boot": func(s *Store) []byte {
			raw, _ := json.Marshal(graph.Ticket{PID: os.Getppid(), Boot: "another-boot", Nonce: "bb22"})
			return raw
		},
		"this pid, ticket not held": func(s *Store) []byte {
			raw, _ := json.Marshal(graph.Ticket{PID: os.Getpid(), Boot: s.proc.Boot(), Nonce: "cc33"})
			return raw
		},
		"not a ticket (a machine crash)": func(*Store) []byte { return nil },
	} {
		t.Run(name, func(t *testing.T) {
			s := openStore(t, Options{LockTimeout: 5 * time.Second})
			newRun(t, s, "r1")
			path := filepath.Join(s.Dir("r1"), lockFile)
			if err := os.WriteFile(path, lockContent(s), 0o600); err != nil {
				t.Fatal(err)
			}
			before := Steals()
			if _, err := s.Update(context.Background(), "r1", func(*graph.Run) error { return nil }); err != nil {
				t.Fatalf("update over a dead owner's lock: %v", err)
			}
			if Steals() != before+1 {
				t.Fatalf("steals %d → %d, want one", before, Steals())
			}
			if leftovers, _ := filepath.Glob(path + "*"); len(leftovers) != 0 {
				t.Fatalf("lock files left: %v", leftovers)
			}
		})
	}
}

func TestADeadStealersStealLockIsBrokenToo(t *testing.T) {
	s := openStore(t, Options{LockTimeout: 5 * time.Second})
	newRun(t, s, "r1")
	path := filepath.Join(s.Dir("r1"), lockFile)
	victim := graph.Ticket{PID: deadPID(t), Boot: s.proc.Boot(), Nonce: "dd44"}
	writeLock(t, path, victim)
	// A stealer died holding the steal lock of that victim.
	writeLock(t, path+".steal."+victim.Nonce, graph.Ticket{PID: deadPID(t), Boot: s.proc.Boot(), Nonce: "ee55"})
	if _, err := s.Update(context.Background(), "r1", func(*graph.Run) error { return nil }); err != nil {
		t.Fatalf("update: %v", err)
	}
}

// childMain is what a child process of a multi-process test does.
func childMain(mode string) int {
	dir, id := os.Getenv("GRAPH_STORE_DIR"), os.Getenv("GRAPH_STORE_RUN")
	s, err := Open(dir, Options{LockTimeout: 2 * time.Minute})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	switch mode {
	case "mutate":
		// Mutate the run N times, each change naming this child and its
		// count.
		n, _ := strconv.Atoi(os.Getenv("GRAPH_STORE_N"))
		who := os.Getenv("GRAPH_STORE_WHO")
		for i := 1; i <= n; i++ {
			if _, err := s.Update(ctx, id, func(r *graph.Run) error {
				r.Emit("count", "", map[string]any{"who": who, "i": i})
				return nil
			}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	case "steal":
		// Wait for the start, take the lock once, and record entry and
		// exit in a shared log inside the critical section.
		bufio.NewReader(os.Stdin).ReadString('\n')
		who := os.Getenv("GRAPH_STORE_WHO")
		logPath := os.Getenv("GRAPH_STORE_LOG")
		if _, err := s.Update(ctx, id, func(r *graph.Run) error {
			appendLine(logPath, "enter "+who)
			time.Sleep(time.Millisecond)
			appendLine(logPath, "exit "+who)
			return nil
		}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println(Steals())
		return 0
	}
	return 2
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	f.WriteString(line + "\n")
	f.Close()
}

func child(t *testing.T, mode string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{childEnv + "=" + mode}, env...)...)
	cmd.Stderr = os.Stderr
	return cmd
}

// Eight processes change one run a thousand times each: every change is
// kept (the run's revision and its events count them all).
func TestEightProcessesLoseNoUpdate(t *testing.T) {
	const procs, each = 8, 1000
	n := each
	if testing.Short() {
		n = 100
	}
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	var cmds []*exec.Cmd
	for i := range procs {
		cmd := child(t, "mutate", "GRAPH_STORE_DIR="+s.root, "GRAPH_STORE_RUN=r1",
			"GRAPH_STORE_N="+strconv.Itoa(n), "GRAPH_STORE_WHO=p"+strconv.Itoa(i))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("a child failed: %v", err)
		}
	}
	r, err := s.Load("r1")
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(1 + procs*n); r.Rev != want {
		t.Fatalf("revision %d after %d changes, want %d: updates were lost", r.Rev, procs*n, want)
	}
	events, _, err := s.EventsFrom("r1", 0)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for i, e := range events {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i+1, e.Seq)
		}
		if e.Type != "count" {
			continue
		}
		var d struct {
			Who string
			I   int
		}
		json.Unmarshal(e.Data, &d)
		if d.I != seen[d.Who]+1 {
			t.Fatalf("%s's change %d follows its change %d", d.Who, d.I, seen[d.Who])
		}
		seen[d.Who] = d.I
	}
	for i := range procs {
		if who := "p" + strconv.Itoa(i); seen[who] != n {
			t.Errorf("%s: %d changes recorded, want %d", who, seen[who], n)
		}
	}
}

// Twenty processes find the lock of a dead owner at once: exactly one
// breaks it, and they then take the lock one at a time.
func TestTwentyStealersOneWinner(t *testing.T) {
	const procs = 20
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	writeLock(t, filepath.Join(s.Dir("r1"), lockFile), graph.Ticket{PID: deadPID(t), Boot: s.proc.Boot(), Nonce: "ff66"})
	logPath := filepath.Join(t.TempDir(), "critical.log")
	type kid struct {
		cmd   *exec.Cmd
		start *os.File
		out   *strings.Builder
	}
	var kids []kid
	for i := range procs {
		cmd := child(t, "steal", "GRAPH_STORE_DIR="+s.root, "GRAPH_STORE_RUN=r1",
			"GRAPH_STORE_WHO=p"+strconv.Itoa(i), "GRAPH_STORE_LOG="+logPath)
		w, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, kid{cmd: cmd, start: w.(*os.File), out: &out})
	}
	// Every child is started; let them all go at once.
	for _, k := range kids {
		k.start.WriteString("go\n")
	}
	total := 0
	for _, k := range kids {
		if err := k.cmd.Wait(); err != nil {
			t.Fatalf("a child failed: %v", err)
		}
		n, err := strconv.Atoi(strings.TrimSpace(k.out.String()))
		if err != nil {
			t.Fatalf("child said %q", k.out.String())
		}
		total += n
	}
	if total != 1 {
		t.Fatalf("%d processes broke the dead owner's lock, want exactly 1", total)
	}
	raw, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2*procs {
		t.Fatalf("%d critical-section lines, want %d", len(lines), 2*procs)
	}
	for i := 0; i < len(lines); i += 2 {
		in, out := strings.TrimPrefix(lines[i], "enter "), strings.TrimPrefix(lines[i+1], "exit ")
		if !strings.HasPrefix(lines[i], "enter ") || in != out {
			t.Fatalf("critical sections overlap at line %d: %q then %q", i+1, lines[i], lines[i+1])
		}
	}
	if r, _ := s.Load("r1"); r.Rev != 1+procs {
		t.Fatalf("revision %d, want %d", r.Rev, 1+procs)
	}
}

func FuzzDecodeRun(f *testing.F) {
	r, _ := graph.New(graph.OpenOptions{ID: "r", Request: "x", Cwd: "/w"})
	raw, _ := json.Marshal(r)
	f.Add(raw)
	f.Add([]byte(`{"version":1,"id":"r","nodes":[null]}`))
	f.Add([]byte(`{"version":1,"id":"r","state":"open","nodes":[{"id":"a","state":"pending","deps":["a"]},{"id":"b","after":["zz"]}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		r, err := decodeRun("r", raw)
		if err != nil {
			if c := graph.CodeOf(err); c != graph.CodeStoreDamaged && c != graph.CodeStoreVersion {
				t.Fatalf("error of code %s: %v", c, err)
			}
			return
		}
		// Whatever the file held, reading it is safe.
		graph.StatusOf(r, time.Now())
		r.ReadyNodes()
		r.Account()
		for _, n := range r.Nodes {
			r.CanClaim(n.ID)
			graph.Brief(r, n, func(string) *graph.Result { return nil }, "")
		}
	})
}

func TestWhenATicketNoLongerHolds(t *testing.T) {
	p := Self()
	held := p.NewTicket()
	dropped := p.NewTicket()
	p.Drop(dropped)
	parent := graph.Ticket{PID: os.Getppid(), Boot: p.Boot(), Nonce: "aa"}
	reused := parent
	reused.Start = 1 // the parent started at another time: its pid was reused
	for name, tc := range map[string]struct {
		t    graph.Ticket
		gone bool
		why  string
	}{
		"held by this process":        {held, false, ""},
		"this pid, no longer held":    {dropped, true, "no longer holds"},
		"from another boot":           {graph.Ticket{PID: os.Getppid(), Boot: "other", Nonce: "bb"}, true, "another boot"},
		"a dead owner":                {graph.Ticket{PID: deadPID(t), Boot: p.Boot(), Nonce: "cc"}, true, "is dead"},
		"a live owner":                {parent, false, ""},
		"a live pid, another process": {reused, true, "belongs to another process"},
	} {
		t.Run(name, func(t *testing.T) {
			gone, why := p.Gone(tc.t)
			if gone != tc.gone || !strings.Contains(why, tc.why) {
				t.Fatalf("Gone = %v, %q; want %v, %q", gone, why, tc.gone, tc.why)
			}
		})
	}
}

// A change whose events cannot be appended (here: events.jsonl is a
// folder, as good as a full disk for it) is still made, and reported made.
func TestAChangeIsMadeOnceRunJSONIsWrittenWhateverItsEvents(t *testing.T) {
	s := openStore(t, Options{})
	newRun(t, s, "r1")
	path := filepath.Join(s.Dir("r1"), eventsFile)
	os.Remove(path)
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	r, err := s.Update(context.Background(), "r1", func(r *graph.Run) error { r.Emit("kept", "", nil); return nil })
	if err != nil || r.Rev != 2 {
		t.Fatalf("update: rev %v, %v", r, err)
	}
	os.Remove(path)
	if _, err := s.Update(context.Background(), "r1", func(r *graph.Run) error { r.Emit("next", "", nil); return nil }); err != nil {
		t.Fatal(err)
	}
	events, _, _ := s.EventsFrom("r1", 0)
	if len(events) != 2 || events[0].Type != "kept" || events[1].Type != "next" {
		t.Fatalf("events %+v: the lost change's events did not come with the next", events)
	}
}
