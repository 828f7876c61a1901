package runner

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/term"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/pkg/wire"
)

// terminalOutput runs a Link whose supervisor says frames in its hello,
// prints file on a terminal in raw mode (so the terminal passes every byte
// through unchanged), and returns what the terminal's client received,
// whether ready agreed to frames, and everything the Link wrote.
func terminalOutput(t *testing.T, frames bool, file string) (out []byte, readyFrames bool, raw []byte) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	link := &Link{Options: Options{Dir: t.TempDir(), Spec: wire.Spec{ID: "s1"}}, Terminals: NewTerminals(term.NewHub(term.HubOptions{Pace: true}))}
	served := make(chan error, 1)
	go func() {
		served <- link.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	defer func() {
		inW.Close()
		select {
		case <-served:
		case <-time.After(waitLimit):
			t.Error("link did not end after stdin closed")
		}
	}()
	var copy testio.Buffer
	dec := wire.NewDecoder(io.TeeReader(outR, &copy), 0)
	dec.AcceptTermFrames()
	enc := wire.NewEncoder(inW)
	next := func() wire.Message {
		t.Helper()
		m, _, err := dec.Decode()
		if err != nil {
			t.Fatalf("read from the link: %v", err)
		}
		return m
	}
	enc.Encode(&wire.Hello{Proto: wire.ProtocolVersion, TermFrames: frames})
	if m, ok := next().(*wire.Ready); !ok || m.Error != nil {
		t.Fatalf("answer to hello: %+v", m)
	} else {
		readyFrames = m.TermFrames
	}
	const window = 256 << 10
	enc.EncodeID("o", &wire.TermOpen{TermID: "t1", ClientID: "sup", Role: "owner", Window: window,
		Command: []string{"/bin/sh", "-c", "stty raw -echo; read go; cat " + file}})
	if m, ok := next().(*wire.TermOpened); !ok || m.Error != nil {
		t.Fatalf("answer to term.open: %+v", m)
	}
	enc.Encode(&wire.TermInput{TermID: "t1", ClientID: "sup", Data: []byte("go\n")})
	acked := 0
	// No deadline of its own: 3 MiB through a paced terminal under -race
	// on a busy machine can take longer than any fixed guess, and a link
	// that never ends is caught by go test's own timeout.
	for {
		switch m := next().(type) {
		case *wire.TermExit:
			return out, readyFrames, copy.Bytes()
		case *wire.TermData:
			out = append(out, m.Data...)
			if len(out)-acked >= window/2 {
				acked = len(out)
				enc.Encode(&wire.TermAck{TermID: "t1", ClientID: "sup", Acked: int64(acked)})
			}
		default:
			t.Fatalf("unexpected %+v", m)
		}
	}
}

func TestLinkSendsTerminalOutputAsFramesOnlyWhenAsked(t *testing.T) {
	// Far more than one batch.
	file, content := testio.EveryByteFile(t, 3<<20)
	for _, frames := range []bool{false, true} {
		out, readyFrames, raw := terminalOutput(t, frames, file)
		if readyFrames != frames {
			t.Errorf("hello asking for frames %v: ready says %v", frames, readyFrames)
		}
		// The terminal's stream may begin with whatever the terminal
		// printed before stty took effect; it ends with the file.
		if !bytes.HasSuffix(out, content) || len(out) > len(content)+16 {
			t.Errorf("frames %v: the client got %d bytes, not the file's %d", frames, len(out), len(content))
		}
		jsonData := bytes.Contains(raw, []byte(`"t":"term.data"`))
		frameData := bytes.Contains(raw, []byte{wire.TermFrameMarker, 0x01})
		switch {
		case frames && (jsonData || !frameData):
			t.Errorf("asked for frames: JSON term.data %v, frames %v", jsonData, frameData)
		case !frames && (!jsonData || bytes.IndexByte(raw, wire.TermFrameMarker) >= 0):
			t.Errorf("did not ask for frames: JSON term.data %v, a frame marker in the stream %v", jsonData, bytes.IndexByte(raw, wire.TermFrameMarker) >= 0)
		}
	}
}

func TestWireSinkTakesInlineOnlyWithinTheWindow(t *testing.T) {
	s, sentSizes := recordingSink(10)
	try := func(n int, want bool) {
		t.Helper()
		taken, err := s.TryData(make([]byte, n))
		if err != nil || taken != want {
			t.Fatalf("TryData(%d bytes) = %v, %v; want %v", n, taken, err, want)
		}
	}
	try(8, true)
	try(8, true)  // 8 unacknowledged: still within the window
	try(1, false) // 16: the hub queues it, and Data waits
	s.ack(7)
	try(1, true)
	s.Closed(nil)
	try(5, true) // released: taken, and dropped
	if sent := sentSizes(); len(sent) != 3 {
		t.Fatalf("sent %v, want the three pieces taken before the detach", sent)
	}
}
