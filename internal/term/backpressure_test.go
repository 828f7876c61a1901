package term

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
)

// stalledSink is a recorder whose Data blocks until released, like a client
// on a connection that stopped draining.
type stalledSink struct {
	*recorder
	release chan struct{}
	once    sync.Once
}

func newStalledSink() *stalledSink {
	return &stalledSink{recorder: newRecorder(), release: make(chan struct{})}
}

func (s *stalledSink) Data(p []byte) error {
	<-s.release
	return s.recorder.Data(p)
}

func (s *stalledSink) unblock() { s.once.Do(func() { close(s.release) }) }

// attachStalled attaches a client with a stalled sink. Cleanup releases the
// sink before detaching, since detaching waits for the Sink's last call.
func attachStalled(t *testing.T, h *Hub, req AttachRequest) (*Client, Grant, *stalledSink) {
	t.Helper()
	s := newStalledSink()
	c, g, err := h.Attach(context.Background(), req, s)
	if err != nil {
		t.Fatalf("attach %s: %v", req.ClientID, err)
	}
	t.Cleanup(func() {
		s.unblock()
		c.Close()
	})
	return c, g, s
}

func TestSlowClientIsCutWhileOthersKeepReceiving(t *testing.T) {
	const (
		bound = 64 << 10
		block = 16 << 10 // output per round; the fast client drains it before the next
	)
	h := newTestHub(t, HubOptions{ClientBufferBytes: bound})
	owner, _, fast := attach(t, h, AttachRequest{TermID: "t", ClientID: "fast", Role: RoleOwner,
		Command: shell(fmt.Sprintf(`while read n; do head -c %d /dev/zero | tr '\0' x; echo; echo "END$n"; done`, block))})
	slowClient, _, slow := attachStalled(t, h, AttachRequest{TermID: "t", ClientID: "slow"})

	round := func(n int) {
		t.Helper()
		input(t, owner, fmt.Sprintf("%d\n", n))
		fast.waitForText(t, fmt.Sprintf("END%d\r\n", n))
	}
	// The reader cuts a client the moment its queue would pass the bound,
	// before handing the same chunk to anyone else, so once the fast client
	// has seen twice the bound the slow one is already gone.
	rounds := 2*bound/block + 1
	for n := 1; n <= rounds; n++ {
		round(n)
	}
	if _, ok := h.Client("t", "slow"); ok || h.Clients() != 1 {
		t.Fatalf("slow client still attached after %d bytes; %d clients", rounds*block, h.Clients())
	}
	slow.unblock()
	slow.checkClosed(t, "slow client", ErrSlowClient)
	if got := len(slow.output()); got > bound {
		t.Errorf("slow client was handed %d bytes, more than the %d byte bound", got, bound)
	}

	// The program and the fast client carry on.
	for n := rounds + 1; n <= rounds+3; n++ {
		round(n)
	}
	if h.Terminals() != 1 {
		t.Errorf("%d terminals; the program should still run", h.Terminals())
	}
	if err := slowClient.Input(nil); !errors.Is(err, ErrReadOnly) {
		t.Errorf("cut read-only client input: %v", err)
	}
}

func TestSlowOwnerCutFreesTheOwnerSeat(t *testing.T) {
	const (
		bound = 16 << 10
		block = 4 << 10 // output per round; the watcher drains it before the next
	)
	h := newTestHub(t, HubOptions{ClientBufferBytes: bound})
	_, _, watcher := attach(t, h, AttachRequest{TermID: "t", ClientID: "watcher",
		Command: shell(fmt.Sprintf(`while read n; do head -c %d /dev/zero | tr '\0' x; echo; echo "END$n"; done`, block))})
	slowOwner, g, slow := attachStalled(t, h, AttachRequest{TermID: "t", ClientID: "owner", Role: RoleOwner})
	if g.Role != RoleOwner {
		t.Fatalf("owner request granted %q", g.Role)
	}
	// The owner types while its output piles up; its input does not wait on
	// its output. Once it is cut, its input is refused.
	for n := 1; ; n++ {
		err := slowOwner.Input([]byte(fmt.Sprintf("%d\n", n)))
		if errors.Is(err, ErrDetached) {
			break
		}
		if err != nil {
			t.Fatalf("owner input: %v", err)
		}
		if n > 2*bound/block+1 {
			t.Fatalf("owner still attached after %d bytes of output", n*block)
		}
		watcher.waitForText(t, fmt.Sprintf("END%d\r\n", n))
	}
	slow.unblock()
	slow.checkClosed(t, "slow owner", ErrSlowClient)
	_, g, _ = attach(t, h, AttachRequest{TermID: "t", ClientID: "next", Role: RoleOwner})
	if g.Role != RoleOwner {
		t.Errorf("owner request after the owner was cut got %q", g.Role)
	}
}
