package runner

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

func TestWireSinkSendsNoMoreThanTheWindowAhead(t *testing.T) {
	s, sentSizes := recordingSink(10)
	s.Data(make([]byte, 8))
	s.Data(make([]byte, 8)) // 8 unacknowledged: still within the window
	third := make(chan struct{})
	go func() {
		s.Data(make([]byte, 1)) // 16 unacknowledged: waits
		close(third)
	}()
	select {
	case <-third:
		t.Fatal("sent 16 bytes ahead of a 10 byte window")
	case <-time.After(100 * time.Millisecond):
	}
	s.ack(7)
	select {
	case <-third:
	case <-time.After(waitLimit):
		t.Fatal("an acknowledgement did not let the output go")
	}
	fourth := make(chan struct{})
	go func() {
		s.Data(make([]byte, 5)) // 10 unacknowledged: waits
		close(fourth)
	}()
	s.Closed(nil) // the client detached: nothing more is sent
	<-fourth
	if sent := sentSizes(); len(sent) != 3 || sent[2] != 1 {
		t.Fatalf("sent %v, want the three pieces before the detach", sent)
	}
}

func TestLinkTerminalFlowControl(t *testing.T) {
	const (
		window = 64 << 10
		size   = 1 << 20
	)
	p := startLink(t, "")
	p.send("", &wire.Hello{Proto: wire.ProtocolVersion})
	spec := wire.Spec{ID: "s1", Engine: "script", Cwd: t.TempDir(), Scenario: scenarioFile(t, writeAndRun)}
	p.send("1", &wire.LiveEnsure{Spec: spec})
	await[*wire.LiveReady](p, "live.ready", "1", nil)
	p.send("o", &wire.TermOpen{TermID: "t1", ClientID: "sup", Role: "owner", Window: window,
		Command: []string{"/bin/sh", "-c", "head -c 1048576 /dev/zero | tr '\\0' x; echo; echo END"}})
	await[*wire.TermOpened](p, "term.opened", "o", nil)

	// Acknowledge in halves of the window, as a reader that keeps up does:
	// the output flows to its end only if the acknowledgements arrive.
	var out bytes.Buffer
	acked := 0
	for {
		m := await(p, "term output", "", func(m wire.TermMessage) bool {
			_, data := m.(*wire.TermData)
			_, exit := m.(*wire.TermExit)
			return data || exit
		})
		if exit, ok := m.(*wire.TermExit); ok {
			if *exit.ExitCode != 0 {
				t.Fatalf("exit %d", *exit.ExitCode)
			}
			break
		}
		out.Write(m.(*wire.TermData).Data)
		if out.Len()-acked >= window/2 {
			acked = out.Len()
			p.send("", &wire.TermAck{TermID: "t1", ClientID: "sup", Acked: int64(acked)})
		}
	}
	if got := strings.Count(out.String(), "x"); got != size || !strings.HasSuffix(out.String(), "END\r\n") {
		t.Fatalf("got %d x's ending %q, want %d", got, out.String()[max(0, out.Len()-20):], size)
	}
}

// recordingSink is a wire sink with a flow-control window of window bytes
// that records the size of every piece it sends.
func recordingSink(window int64) (*wireSink, func() []int) {
	var mu sync.Mutex
	var sent []int
	s := &wireSink{termID: "t", clientID: "c", window: window, forget: func() {},
		send: func(_ string, m wire.Message) {
			mu.Lock()
			sent = append(sent, len(m.(*wire.TermData).Data))
			mu.Unlock()
		}}
	s.credit = sync.NewCond(&s.mu)
	return s, func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), sent...)
	}
}
