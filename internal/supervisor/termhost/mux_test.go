package termhost

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// recordingManager stands in for the supervisor: it grants every open,
// keeps the sinks so a test can play the runner, and records the rest.
type recordingManager struct {
	mu       sync.Mutex
	opens    []wire.TermOpen
	sinks    map[string]func(wire.Message) // by runner client id
	inputs   []wire.TermInput
	resizes  []wire.TermResize
	closes   []string
	acks     []int64
	refuse   error
	role     string
	recycled [][]byte
}

func newRecordingManager() *recordingManager {
	return &recordingManager{sinks: map[string]func(wire.Message){}, role: api.RoleOwner}
}

func (r *recordingManager) OpenTerm(_ context.Context, _ string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.refuse != nil {
		return nil, r.refuse
	}
	r.opens = append(r.opens, t)
	r.sinks[t.ClientID] = sink
	cols, rows := t.Cols, t.Rows
	if cols == 0 {
		cols, rows = 80, 24
	}
	return &wire.TermOpened{TermID: t.TermID, ClientID: t.ClientID, Role: r.role, Cols: cols, Rows: rows}, nil
}

// ExportTerm never hands the terminal over: the runner's output comes
// through the sink, as from a runner that cannot.
func (r *recordingManager) ExportTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, *os.File, error) {
	got, err := r.OpenTerm(ctx, id, t, sink)
	return got, nil, err
}

func (r *recordingManager) UnexportTerm(id, _, clientID string, _ []byte) error {
	return r.CloseTerm(id, "", clientID)
}

func (r *recordingManager) TermInput(_ string, t wire.TermInput) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inputs = append(r.inputs, t)
	return nil
}

func (r *recordingManager) TermResize(_ string, t wire.TermResize) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resizes = append(r.resizes, t)
	return nil
}

func (r *recordingManager) TermAck(_ string, t wire.TermAck) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, t.Acked)
	return nil
}

func (r *recordingManager) CloseTerm(_, _, clientID string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closes = append(r.closes, clientID)
	return nil
}

func (r *recordingManager) RecycleTermData(p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recycled = append(r.recycled, p)
}

func (r *recordingManager) TermBuffer(n int) []byte { return make([]byte, n) }

func (r *recordingManager) recycledCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.recycled)
}

// runner plays the runner's side of the last opened runner client.
func (r *recordingManager) runner(t *testing.T) func(wire.Message) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.opens) == 0 {
		t.Fatal("nothing opened")
	}
	return r.sinks[r.opens[len(r.opens)-1].ClientID]
}

func data(p string) *wire.TermData {
	return &wire.TermData{TermID: "main", Data: []byte(p)}
}

// drainOutbox takes everything queued: the output, the notices and the end.
func drainOutbox(o *termOutbox) (string, []api.TermFrame, *termEnd) {
	var out []byte
	var notices []api.TermFrame
	for {
		n, pieces, end := o.take(nil, 1<<20)
		notices = append(notices, n...)
		for _, p := range pieces {
			out = append(out, p.p...)
		}
		if len(pieces) == 0 {
			return string(out), notices, end
		}
	}
}

func attachQ(t *testing.T, s *termMuxes, role string, cols, rows uint16, limit int) (*muxClient, termGrant, *termOutbox) {
	t.Helper()
	out := newTermOutbox(limit)
	c, g, err := s.attach(context.Background(), Request{Session: "s1", TermID: "main", Role: role, Cols: cols, Rows: rows}, out)
	if err != nil {
		t.Fatal(err)
	}
	return c, g, out
}

func TestMuxSharesOneRunnerClientWithOneOwner(t *testing.T) {
	rm := newRecordingManager()
	s := newTermMuxes(rm)
	owner, g, oOut := attachQ(t, s, api.RoleOwner, 100, 30, 1<<20)
	if g.role != api.RoleOwner || g.cols != 100 || g.rows != 30 {
		t.Fatalf("owner grant %+v", g)
	}
	runner := rm.runner(t)
	runner(data("hello "))
	second, g2, sOut := attachQ(t, s, api.RoleOwner, 90, 20, 1<<20)
	viewer, g3, vOut := attachQ(t, s, api.RoleReadOnly, 0, 0, 1<<20)
	if g2.role != api.RoleReadOnly || g3.role != api.RoleReadOnly || g2.cols != 100 || g2.rows != 30 {
		t.Fatalf("second %+v, viewer %+v: want read-only at the owner's size", g2, g3)
	}
	runner(data("world"))
	if len(rm.opens) != 1 || len(rm.resizes) != 0 {
		t.Fatalf("opens %+v, resizes %+v: want one runner client and no resize", rm.opens, rm.resizes)
	}
	for name, o := range map[string]*termOutbox{"owner": oOut, "second": sOut, "viewer": vOut} {
		if got, _, _ := drainOutbox(o); got != "hello world" {
			t.Fatalf("%s got %q: the scrollback and live output must meet exactly", name, got)
		}
	}

	// Only the owner types and resizes.
	if err := viewer.input([]byte("x")); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("viewer input: %v", err)
	}
	if err := second.resize(10, 10); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("second resize: %v", err)
	}
	if err := owner.input([]byte("ls\r")); err != nil {
		t.Fatal(err)
	}
	if err := owner.resize(120, 40); err != nil {
		t.Fatal(err)
	}
	runnerID := rm.opens[0].ClientID
	if len(rm.inputs) != 1 || rm.inputs[0].ClientID != runnerID || string(rm.inputs[0].Data) != "ls\r" ||
		len(rm.resizes) != 1 || rm.resizes[0].Cols != 120 {
		t.Fatalf("inputs %+v, resizes %+v", rm.inputs, rm.resizes)
	}

	// The seat frees when the owner leaves; the next owner request takes
	// it and gives the terminal its size. Clients already there are not
	// promoted.
	owner.detach()
	if err := second.input([]byte("x")); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("a viewer was promoted: %v", err)
	}
	next, g4, _ := attachQ(t, s, api.RoleOwner, 132, 43, 1<<20)
	if g4.role != api.RoleOwner || g4.cols != 132 || len(rm.resizes) != 2 || rm.resizes[1].Rows != 43 {
		t.Fatalf("next owner %+v, resizes %+v", g4, rm.resizes)
	}
	// A refused input comes back from the runner to the owner alone.
	runner(&wire.TermError{Error: wire.Errorf(wire.CodeBadRequest, "zero size")})
	if _, notices, _ := drainOutbox(next.out); len(notices) != 1 || notices[0].Code != wire.CodeBadRequest || notices[0].Fatal {
		t.Fatalf("owner notices %+v", notices)
	}
	if _, notices, _ := drainOutbox(vOut); len(notices) != 0 {
		t.Fatalf("viewer notices %+v", notices)
	}

	for _, c := range []*muxClient{second, viewer, next} {
		c.detach()
	}
	if len(rm.closes) != 1 || rm.closes[0] != runnerID {
		t.Fatalf("closes %v: the last detach detaches the runner client once", rm.closes)
	}
}

func TestMuxEndsEveryClientAndStartsAfresh(t *testing.T) {
	tests := []struct {
		name   string
		end    wire.Message
		frame  string
		code   wire.Code
		status websocket.StatusCode
		closes int
	}{
		{"program exit", &wire.TermExit{ExitCode: new(int)}, api.FrameExit, "", websocket.StatusNormalClosure, 0},
		{"runner crash", &wire.TermError{Error: wire.Errorf(wire.CodeRunnerCrashed, "killed")},
			api.FrameError, wire.CodeRunnerCrashed, websocket.StatusInternalError, 1},
		{"cut by the runner", &wire.TermError{Error: wire.Errorf(wire.CodeTimeout, "too slow")},
			api.FrameError, wire.CodeTimeout, websocket.StatusTryAgainLater, 1},
		{"hub closed", &wire.TermError{Error: wire.Errorf(wire.CodeUnavailable, "closed")},
			api.FrameError, wire.CodeUnavailable, websocket.StatusGoingAway, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rm := newRecordingManager()
			s := newTermMuxes(rm)
			a, _, aOut := attachQ(t, s, api.RoleOwner, 0, 0, 1<<20)
			b, _, bOut := attachQ(t, s, api.RoleReadOnly, 0, 0, 1<<20)
			runner := rm.runner(t)
			runner(data("last words"))
			runner(tc.end)
			runner(data("after the end"))
			for _, o := range []*termOutbox{aOut, bOut} {
				out, _, end := drainOutbox(o)
				if out != "last words" || end == nil || end.frame.Type != tc.frame || end.frame.Code != tc.code || end.status != tc.status {
					t.Fatalf("output %q, end %+v", out, end)
				}
			}
			// A client attaching now gets a new runner client (a new
			// program after an exit).
			c, _, _ := attachQ(t, s, api.RoleOwner, 0, 0, 1<<20)
			if len(rm.opens) != 2 {
				t.Fatalf("opens %+v, want a second runner client", rm.opens)
			}
			a.detach()
			b.detach()
			c.detach()
			if len(rm.closes) != tc.closes+1 {
				t.Fatalf("closes %v, want %d", rm.closes, tc.closes+1)
			}
		})
	}
}

func TestMuxCutsOnlyTheSlowClient(t *testing.T) {
	rm := newRecordingManager()
	s := newTermMuxes(rm)
	slow, _, slowOut := attachQ(t, s, api.RoleOwner, 0, 0, 8)
	_, _, fastOut := attachQ(t, s, api.RoleReadOnly, 0, 0, 1<<20)
	runner := rm.runner(t)
	runner(data("12345"))
	runner(data("67890"))
	if _, _, end := drainOutbox(slowOut); end == nil || end.frame.Code != wire.CodeTimeout || end.status != websocket.StatusTryAgainLater {
		t.Fatalf("slow client's end %+v", end)
	}
	if got, _, end := drainOutbox(fastOut); got != "1234567890" || end != nil {
		t.Fatalf("fast client got %q, end %+v", got, end)
	}
	// The cut owner lost its seat at once.
	if err := slow.input([]byte("x")); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("cut owner's input: %v", err)
	}
	if _, g, _ := attachQ(t, s, api.RoleOwner, 0, 0, 1<<20); g.role != api.RoleOwner {
		t.Fatalf("the seat of a cut owner is still taken: %+v", g)
	}
}

func TestMuxOpenFailureReachesTheClient(t *testing.T) {
	rm := newRecordingManager()
	rm.refuse = wire.Errorf(wire.CodeBadRequest, "no such program")
	s := newTermMuxes(rm)
	if _, _, err := s.attach(context.Background(), Request{Session: "s1", TermID: "main"}, newTermOutbox(10)); !errors.Is(err, wire.ErrBadRequest) {
		t.Fatalf("err = %v", err)
	}
	rm.refuse = nil
	if _, _, err := s.attach(context.Background(), Request{Session: "s1", TermID: "main"}, newTermOutbox(10)); err != nil {
		t.Fatalf("a failed open stuck: %v", err)
	}
	if len(rm.closes) != 0 {
		t.Fatalf("closed %v after a failed open", rm.closes)
	}
}

func TestMuxWithoutTheSeatGrantsOnlyReadOnly(t *testing.T) {
	rm := newRecordingManager()
	rm.role = api.RoleReadOnly
	s := newTermMuxes(rm)
	c, g, _ := attachQ(t, s, api.RoleOwner, 0, 0, 1<<20)
	if g.role != api.RoleReadOnly {
		t.Fatalf("grant %+v", g)
	}
	if err := c.input([]byte("x")); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("input: %v", err)
	}
}

func TestOutboxTakesOutputInFramesAndTheEndLast(t *testing.T) {
	o := newTermOutbox(100)
	for _, p := range []string{"abc", "defg", "h"} {
		if !o.push(plainData(p)) {
			t.Fatal("refused within the limit")
		}
	}
	o.notice(errors.New("input: broken pipe"))
	o.finish(exitEnd(&wire.TermExit{Signal: "SIGKILL"}), false)
	if o.push(plainData("late")) {
		t.Fatal("took output after the end")
	}
	notices, pieces, end := o.take(nil, 5)
	if len(notices) != 1 || notices[0].Code != wire.CodeInternal || notices[0].Fatal || string(joinPieces(pieces)) != "abcde" || end != nil {
		t.Fatalf("first take: %+v %q %+v", notices, joinPieces(pieces), end)
	}
	notices, pieces, end = o.take(nil, 5)
	if len(notices) != 0 || string(joinPieces(pieces)) != "fgh" || end == nil {
		t.Fatalf("second take: %+v %q %+v", notices, joinPieces(pieces), end)
	}
	if end.frame.Type != api.FrameExit || *end.frame.ExitCode != -1 || end.frame.Signal != "SIGKILL" {
		t.Fatalf("end %+v", end.frame)
	}
}

func TestOutboxCutDropsWhatWasQueued(t *testing.T) {
	o := newTermOutbox(10)
	o.push(plainData("123456"))
	if o.push(plainData("7890x")) {
		t.Fatal("took output past the limit")
	}
	_, pieces, end := o.take(nil, 100)
	if len(pieces) != 0 || end == nil || !end.frame.Fatal || end.frame.Code != wire.CodeTimeout {
		t.Fatalf("after the cut: %q %+v", joinPieces(pieces), end)
	}
}

func plainData(p string) *termData { return newTermData([]byte(p), nil) }

// TestOutboxReleasesOutputOnceSentOrDropped follows one piece of output
// queued by two clients: its buffer is recycled once, after the last of
// them has sent it or dropped it, and never while one still holds it.
func TestOutboxReleasesOutputOnceSentOrDropped(t *testing.T) {
	var recycled [][]byte
	d := newTermData([]byte("0123456789"), func(p []byte) { recycled = append(recycled, p) })
	fast, slow := newTermOutbox(100), newTermOutbox(12)
	if !fast.push(d) || !slow.push(d) {
		t.Fatal("refused within the limit")
	}
	d.release() // the fan-out's own reference
	steps := []struct {
		name string
		do   func()
		want int // recycles so far
	}{
		{"the fast client takes the first half", func() {
			_, pieces, _ := fast.take(nil, 5)
			if string(joinPieces(pieces)) != "01234" || pieces[0].d != nil {
				t.Fatalf("first half %+v", pieces)
			}
			sent(pieces)
		}, 0},
		{"and sends the rest", func() {
			_, pieces, _ := fast.take(nil, 100)
			if string(joinPieces(pieces)) != "56789" || pieces[0].d != d {
				t.Fatalf("second half %+v", pieces)
			}
			sent(pieces)
		}, 0},
		{"the slow client is cut", func() {
			if slow.push(plainData("abc")) {
				t.Fatal("took output past the limit")
			}
		}, 1},
		{"and its end drops nothing twice", func() { slow.finish(fatalEnd(errors.New("gone")), true) }, 1},
	}
	for _, step := range steps {
		step.do()
		if len(recycled) != step.want {
			t.Fatalf("after %s: recycled %d times, want %d", step.name, len(recycled), step.want)
		}
	}
	if string(recycled[0]) != "0123456789" {
		t.Fatalf("recycled %q", recycled[0])
	}
}

// TestMuxRecyclesOutputOnceEveryClientSentIt: the buffer a frame of output
// came in goes back to the manager only after the last of its clients has
// sent it.
func TestMuxRecyclesOutputOnceEveryClientSentIt(t *testing.T) {
	rm := newRecordingManager()
	s := newTermMuxes(rm)
	_, _, owner := attachQ(t, s, api.RoleOwner, 0, 0, 1<<20)
	_, _, viewer := attachQ(t, s, api.RoleReadOnly, 0, 0, 1<<20)
	rm.runner(t)(data("output"))
	for i, o := range []*termOutbox{owner, viewer} {
		if n := rm.recycledCount(); n != 0 {
			t.Fatalf("recycled %d buffers before client %d sent the output", n, i)
		}
		_, pieces, _ := o.take(nil, 1<<20)
		if string(joinPieces(pieces)) != "output" {
			t.Fatalf("client %d took %q", i, joinPieces(pieces))
		}
		sent(pieces)
	}
	if n := rm.recycledCount(); n != 1 {
		t.Fatalf("recycled %d buffers after both clients sent the output, want 1", n)
	}
}

func joinPieces(pieces []outPiece) []byte {
	var out []byte
	for _, p := range pieces {
		out = append(out, p.p...)
	}
	return out
}

// TestMuxAcksFromWritersRacingEachOther: writers report progress while the
// runner's output is still being fanned out to them; the runner is told
// everything the clients took (up to the last step not yet due), and never
// more.
func TestMuxAcksFromWritersRacingEachOther(t *testing.T) {
	rm := newRecordingManager()
	s := newTermMuxes(rm)
	var clients []*muxClient
	var outs []*termOutbox
	for i := range 4 {
		role := api.RoleReadOnly
		if i == 0 {
			role = api.RoleOwner
		}
		c, _, out := attachQ(t, s, role, 0, 0, 64<<20)
		clients, outs = append(clients, c), append(outs, out)
	}
	runner := rm.runner(t)
	chunk := strings.Repeat("y", 64<<10)
	const chunks = 64
	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for got := 0; got < chunks*len(chunk); {
				_, pieces, _ := outs[i].take(nil, 100<<10)
				for _, p := range pieces {
					got += len(p.p)
				}
				sent(pieces)
				c.mux.progress()
			}
		}()
	}
	for range chunks {
		runner(data(chunk))
	}
	wg.Wait()
	rm.mu.Lock()
	defer rm.mu.Unlock()
	total := int64(chunks * len(chunk))
	last := int64(0)
	for _, a := range rm.acks {
		if a > total {
			t.Fatalf("acked %d, more than the %d bytes sent", a, total)
		}
		last = max(last, a)
	}
	if total-last >= ackStepBytes {
		t.Fatalf("acks %v: the largest leaves a step or more of the %d bytes taken unacknowledged", rm.acks, total)
	}
}

func TestMuxAcknowledgesWhatTheFastestClientTook(t *testing.T) {
	rm := newRecordingManager()
	s := newTermMuxes(rm)
	fast, _, fastOut := attachQ(t, s, api.RoleOwner, 0, 0, 8<<20)
	_, _, _ = attachQ(t, s, api.RoleReadOnly, 0, 0, 8<<20) // takes nothing
	if rm.opens[0].Window != termWindowBytes {
		t.Fatalf("opened with window %d", rm.opens[0].Window)
	}
	runner := rm.runner(t)
	chunk := strings.Repeat("x", 100<<10)
	for range 6 {
		runner(data(chunk))
	}
	fast.mux.progress()
	if len(rm.acks) != 0 {
		t.Fatalf("acknowledged %v before anyone took anything", rm.acks)
	}
	drainOutbox(fastOut)
	fast.mux.progress()
	if len(rm.acks) != 1 || rm.acks[0] != 600<<10 {
		t.Fatalf("acks %v, want what the fast client took", rm.acks)
	}

	// A late client's replay is not new progress; what it takes after it is.
	fast.detach()
	late, _, lateOut := attachQ(t, s, api.RoleReadOnly, 0, 0, 8<<20)
	drainOutbox(lateOut)
	late.mux.progress()
	if len(rm.acks) != 1 {
		t.Fatalf("acks %v after a replay", rm.acks)
	}
	for range 3 {
		runner(data(chunk))
	}
	drainOutbox(lateOut)
	late.mux.progress()
	if len(rm.acks) != 2 || rm.acks[1] != 900<<10 {
		t.Fatalf("acks %v, want 900 KiB", rm.acks)
	}
}
