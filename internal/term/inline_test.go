package term

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// inlineRecorder is a recorder that also takes output on the reader
// (InlineSink). refuse decides, per TryData call, to leave that output to
// Data; block, when set, holds TryData until it is closed.
type inlineRecorder struct {
	*recorder
	refuse func(call int) bool
	fail   error // returned by TryData, once taken

	mu        sync.Mutex
	tries     int
	taken     int
	inFlight  atomic.Int32
	overlaps  atomic.Int32 // Sink calls that ran while another was running
	entered   chan struct{}
	block     chan struct{}
	blockOnce sync.Once
}

func newInlineRecorder(refuse func(int) bool) *inlineRecorder {
	return &inlineRecorder{recorder: newRecorder(), refuse: refuse, entered: make(chan struct{})}
}

func (r *inlineRecorder) enter() {
	if r.inFlight.Add(1) > 1 {
		r.overlaps.Add(1)
	}
}

func (r *inlineRecorder) leave() { r.inFlight.Add(-1) }

func (r *inlineRecorder) TryData(p []byte) (bool, error) {
	r.enter()
	defer r.leave()
	r.blockOnce.Do(func() {
		close(r.entered)
		if r.block != nil {
			<-r.block
		}
	})
	r.mu.Lock()
	call := r.tries
	r.tries++
	r.mu.Unlock()
	if r.refuse != nil && r.refuse(call) {
		return false, nil
	}
	if r.fail != nil {
		return true, r.fail
	}
	r.mu.Lock()
	r.taken++
	r.mu.Unlock()
	// p is the reader's buffer: Data copies it, as a sink that kept it
	// would have to.
	return true, r.recorder.Data(p)
}

func (r *inlineRecorder) Data(p []byte) error {
	r.enter()
	defer r.leave()
	return r.recorder.Data(p)
}

func (r *inlineRecorder) Exit(code int, signal string) {
	r.enter()
	defer r.leave()
	r.recorder.Exit(code, signal)
}

func (r *inlineRecorder) Closed(err error) {
	r.enter()
	defer r.leave()
	r.recorder.Closed(err)
}

func (r *inlineRecorder) counts() (tries, taken int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tries, r.taken
}

// seqOutput is what `seq 1 n` shows on a terminal.
func seqOutput(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%d\r\n", i)
	}
	return b.String()
}

func TestInlineSinksGetTheSameStreamAsQueuedOnes(t *testing.T) {
	const n = 300000 // about 2 MB: many batches
	h := newTestHub(t, HubOptions{})
	// Every client is attached before the program prints: it waits for a
	// line.
	req := AttachRequest{TermID: "t", Role: RoleOwner, Command: shell(fmt.Sprintf("stty -echo; echo ready; read go; seq 1 %d", n))}
	ownerReq := req
	ownerReq.ClientID = "owner"
	always := newInlineRecorder(nil)
	owner, _, err := h.Attach(context.Background(), ownerReq, always)
	if err != nil {
		t.Fatal(err)
	}
	always.waitForText(t, "ready")
	// A sink that refuses every third batch: what it refuses goes through
	// Data, and what follows waits behind it.
	sometimes := newInlineRecorder(func(call int) bool { return call%3 == 2 })
	if _, _, err := h.Attach(context.Background(), AttachRequest{TermID: "t", ClientID: "sometimes"}, sometimes); err != nil {
		t.Fatal(err)
	}
	_, _, plain := attach(t, h, AttachRequest{TermID: "t", ClientID: "plain"})
	sometimes.waitForText(t, "ready")
	plain.waitForText(t, "ready")
	input(t, owner, "go\n")

	want := "ready\r\n" + seqOutput(n)
	always.checkExit(t, "always inline", 0, "")
	sometimes.checkExit(t, "sometimes inline", 0, "")
	plain.checkExit(t, "plain", 0, "")
	for name, r := range map[string]*recorder{"always inline": always.recorder, "sometimes inline": sometimes.recorder, "plain": plain} {
		if got := r.output(); got != want {
			t.Errorf("%s: got %d bytes ending %q, want %d ending %q", name, len(got), tail(got), len(want), tail(want))
		}
	}
	for name, r := range map[string]*inlineRecorder{"always inline": always, "sometimes inline": sometimes} {
		if o := r.overlaps.Load(); o != 0 {
			t.Errorf("%s: %d Sink calls overlapped another", name, o)
		}
	}
	if tries, taken := always.counts(); taken == 0 || taken != tries {
		t.Errorf("always inline: %d of %d batches taken inline, want all and some", taken, tries)
	}
	if tries, taken := sometimes.counts(); taken == 0 || taken == tries {
		t.Errorf("sometimes inline: %d of %d batches taken inline, want some but not all", taken, tries)
	}
}

func TestInlineSinkErrorDetachesOnlyThatClient(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	boom := errors.New("boom")
	failing := newInlineRecorder(nil)
	failing.fail = boom
	owner, _, ownerOut := attach(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner,
		Command: shell("stty -echo; echo ready; read a; echo first; read b; echo second")})
	if _, _, err := h.Attach(context.Background(), AttachRequest{TermID: "t", ClientID: "failing"}, failing); err != nil {
		t.Fatal(err)
	}
	// A line typed before the program is ready races stty: once it was
	// echoed and then never read, and the program waited for a line.
	ownerOut.waitForText(t, "ready")
	input(t, owner, "\n")
	failing.checkClosed(t, "failing", boom)
	ownerOut.waitForText(t, "first")
	input(t, owner, "\n")
	ownerOut.waitForText(t, "second")
	ownerOut.checkExit(t, "owner", 0, "")
}

func TestCloseWaitsForAnInlineDelivery(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	r := newInlineRecorder(nil)
	r.block = make(chan struct{})
	c, _, err := h.Attach(context.Background(), AttachRequest{TermID: "t", ClientID: "c", Role: RoleOwner,
		Command: shell("stty -echo; while read l; do echo output; done")}, r)
	if err != nil {
		t.Fatal(err)
	}
	// Output goes inline once the client has nothing queued; until then,
	// through Data.
	deadline := time.After(patience)
	for entered := false; !entered; {
		input(t, c, "\n")
		select {
		case <-r.entered:
			entered = true
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatal("no inline delivery")
		}
	}
	var closeReturned atomic.Bool
	closed := make(chan struct{})
	go func() {
		c.Close()
		closeReturned.Store(true)
		close(closed)
	}()
	// Give a Close that does not wait for the delivery every chance to
	// return before it ends.
	for {
		if _, ok := h.Client("t", "c"); !ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
	if closeReturned.Load() {
		t.Error("Close returned while TryData was still running")
	}
	close(r.block)
	select {
	case <-closed:
	case <-time.After(patience):
		t.Fatal("Close did not return")
	}
	r.checkClosed(t, "inline client", nil)
	if _, taken := r.counts(); taken == 0 || r.output() == "" {
		t.Errorf("the delivery in progress was lost: %d taken, output %q", taken, r.output())
	}
	if o := r.overlaps.Load(); o != 0 {
		t.Errorf("%d Sink calls overlapped another", o)
	}
}
