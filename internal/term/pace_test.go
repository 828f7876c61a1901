package term

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// terminalOf returns a running terminal of h.
func terminalOf(t *testing.T, h *Hub, id string) *terminal {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	term := h.terms[id]
	if term == nil {
		t.Fatalf("no terminal %q", id)
	}
	return term
}

func TestPaceHoldsTheProgramWhenEveryClientIsBehind(t *testing.T) {
	const (
		bound = 64 << 10
		size  = 1 << 20
	)
	h := newTestHub(t, HubOptions{ClientBufferBytes: bound, Pace: true})
	_, _, slow := attachStalled(t, h, AttachRequest{TermID: "t", ClientID: "only", Role: RoleOwner,
		Command: shell(fmt.Sprintf(`head -c %d /dev/zero | tr '\0' x; echo; echo END`, size))})

	// The lone client falls a bound behind: without Pace it would be cut
	// with the next read, with Pace the reader waits for it.
	term := terminalOf(t, h, "t")
	deadline := time.Now().Add(patience)
	for !term.everyClientBehind() {
		if time.Now().After(deadline) {
			t.Fatal("the stalled client never fell behind")
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := h.Client("t", "only"); !ok {
		t.Fatal("the only client was cut")
	}
	slow.unblock()
	slow.checkExit(t, "paced client", 0, "")
	if out := slow.output(); strings.Count(out, "x") != size || !strings.HasSuffix(out, "END\r\n") {
		t.Fatalf("paced client got %d x's, ending %q; want all %d", strings.Count(out, "x"), tail(out), size)
	}
}

func TestPaceStillCutsAClientBehindTheOthers(t *testing.T) {
	const (
		bound = 64 << 10
		block = 16 << 10
	)
	h := newTestHub(t, HubOptions{ClientBufferBytes: bound, Pace: true})
	owner, _, fast := attach(t, h, AttachRequest{TermID: "t", ClientID: "fast", Role: RoleOwner,
		Command: shell(fmt.Sprintf(`while read n; do head -c %d /dev/zero | tr '\0' x; echo; echo "END$n"; done`, block))})
	_, _, slow := attachStalled(t, h, AttachRequest{TermID: "t", ClientID: "slow"})
	for n := 1; n <= 2*bound/block+1; n++ {
		input(t, owner, fmt.Sprintf("%d\n", n))
		fast.waitForText(t, fmt.Sprintf("END%d\r\n", n))
	}
	if _, ok := h.Client("t", "slow"); ok {
		t.Fatal("a client behind a fast one was waited for instead of cut")
	}
	slow.unblock()
	slow.checkClosed(t, "slow client", ErrSlowClient)
}

func TestPacedReaderLetsGoWhenTheHubCloses(t *testing.T) {
	// A long kill grace: only the hub's own wake-up can free the reader
	// in time, not the timer that closes the master.
	h := NewHub(HubOptions{ClientBufferBytes: 4 << 10, Pace: true, KillGrace: time.Hour})
	_, _, slow := attachStalled(t, h, AttachRequest{TermID: "t", ClientID: "only",
		Command: shell(`exec cat /dev/zero`)})
	term := terminalOf(t, h, "t")
	deadline := time.Now().Add(patience)
	for !term.everyClientBehind() {
		if time.Now().After(deadline) {
			t.Fatal("the stalled client never fell behind")
		}
		time.Sleep(time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- h.Close() }()
	// The client is still stalled, so nothing it does wakes the reader.
	select {
	case <-term.readDone:
	case <-time.After(patience):
		t.Fatal("the paced reader was still waiting after the hub closed")
	}
	slow.unblock()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	slow.checkClosed(t, "client", ErrHubClosed)
}
