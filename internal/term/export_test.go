package term

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// masterReader reads an exported terminal's master as the supervisor does,
// after the replay Export returned: together, the terminal's output.
type masterReader struct {
	master *os.File
	done   chan struct{}
	mu     sync.Mutex
	out    bytes.Buffer
	err    error
}

func readMaster(t *testing.T, ex Exported) *masterReader {
	t.Helper()
	r := &masterReader{master: os.NewFile(uintptr(ex.FD), "ptmx"), done: make(chan struct{})}
	r.out.Write(ex.Replay)
	t.Cleanup(func() { r.master.Close() })
	go func() {
		defer close(r.done)
		or := OutputReader{Master: r.master, Buf: make([]byte, 64<<10), Deliver: func(p []byte) {
			r.mu.Lock()
			r.out.Write(p)
			r.mu.Unlock()
		}}
		err := or.Run()
		r.mu.Lock()
		r.err = err
		r.mu.Unlock()
	}()
	return r
}

func (r *masterReader) waitForText(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(patience)
	for {
		r.mu.Lock()
		out := r.out.String()
		r.mu.Unlock()
		if strings.Contains(out, text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the replay or read from the master within %v; got %q", text, patience, tail(out))
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestExportHandsTheTerminalOverAndBack(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	exporter := newRecorder()
	ex, err := h.Export(AttachRequest{TermID: "t", ClientID: "sup", Cols: 100, Rows: 30,
		Command: shell(`stty -echo; echo ready; read a; echo "got:$a"; read b; echo "after:$b"`)}, exporter)
	if err != nil {
		t.Fatal(err)
	}
	if g := ex.Grant; g.Role != RoleOwner || !g.Created || g.Cols != 100 || g.Rows != 30 || g.ReplayBytes != len(ex.Replay) {
		t.Fatalf("grant %+v with %d bytes of replay", g, len(ex.Replay))
	}
	r := readMaster(t, ex)
	r.waitForText(t, "ready")
	if !h.Active() {
		t.Error("a hub with an exported terminal is not active")
	}

	// While exported, the terminal has one reader.
	if _, _, err := h.Attach(t.Context(), AttachRequest{TermID: "t", ClientID: "other"}, newRecorder()); !errors.Is(err, ErrExported) {
		t.Errorf("attach while exported: %v, want ErrExported", err)
	}
	if _, err := h.Export(AttachRequest{TermID: "t", ClientID: "again"}, newRecorder()); !errors.Is(err, ErrExportBusy) {
		t.Errorf("second export: %v, want ErrExportBusy", err)
	}
	if _, err := r.master.Write([]byte("one\n")); err != nil {
		t.Fatal(err)
	}
	r.waitForText(t, "got:one")

	// Given back, the hub reads again, with the exporter's scrollback.
	r.master.Close()
	<-r.done
	if err := h.Unexport("t", "other", nil); !errors.Is(err, ErrDetached) {
		t.Errorf("unexport by another client: %v, want ErrDetached", err)
	}
	if err := h.Unexport("t", "sup", []byte("kept by the exporter\n")); err != nil {
		t.Fatal(err)
	}
	c, g, rec := attach(t, h, AttachRequest{TermID: "t", ClientID: "back", Role: RoleOwner})
	if g.Created || g.Role != RoleOwner {
		t.Fatalf("grant after the export: %+v", g)
	}
	rec.waitForText(t, "kept by the exporter\n")
	input(t, c, "two\n")
	if out := rec.waitForText(t, "after:two"); strings.Contains(out, "got:one") {
		t.Errorf("the hub read output the exporter had read: %q", out)
	}
	rec.checkExit(t, "client after the export", 0, "")
	exporter.mu.Lock()
	defer exporter.mu.Unlock()
	if exporter.exits+exporter.closes != 0 {
		t.Errorf("the exporter heard of an end after giving the terminal back: %d Exit, %d Closed", exporter.exits, exporter.closes)
	}
}

func TestExportedTerminalTellsItsExporterHowItEnded(t *testing.T) {
	tests := []struct {
		name    string
		script  string
		end     func(h *Hub)
		closed  error // nil: an exit with code
		code    int
		lastOut string
	}{
		{name: "program exits", script: "echo bye; exit 3", code: 3, lastOut: "bye"},
		{name: "hub closes", script: "echo up; exec sleep 30", end: func(h *Hub) { h.Close() }, closed: ErrHubClosed, lastOut: "up"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newTestHub(t, HubOptions{KillGrace: 200 * time.Millisecond})
			exporter := newRecorder()
			ex, err := h.Export(AttachRequest{TermID: "t", ClientID: "sup", Command: shell(tt.script)}, exporter)
			if err != nil {
				t.Fatal(err)
			}
			r := readMaster(t, ex)
			r.waitForText(t, tt.lastOut)
			if tt.end != nil {
				tt.end(h)
			}
			exporter.waitEnd(t)
			exporter.mu.Lock()
			exits, closes, code, closeErr := exporter.exits, exporter.closes, exporter.code, exporter.closeErr
			exporter.mu.Unlock()
			if tt.closed == nil && (exits != 1 || closes != 0 || code != tt.code) {
				t.Errorf("got %d Exit (code %d), %d Closed; want one Exit(%d)", exits, code, closes, tt.code)
			}
			if tt.closed != nil && (exits != 0 || closes != 1 || !errors.Is(closeErr, tt.closed)) {
				t.Errorf("got %d Exit, %d Closed(%v); want one Closed(%v)", exits, closes, closeErr, tt.closed)
			}
			// The exporter's read ends once the session is gone.
			select {
			case <-r.done:
			case <-time.After(patience):
				t.Fatal("the exporter's read did not end with the terminal")
			}
			if h.Active() {
				t.Error("the hub is still active after the terminal ended")
			}
		})
	}
}

func TestExportIsRefusedWhileClientsAreAttached(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	_, _, rec := attach(t, h, AttachRequest{TermID: "t", ClientID: "c", Command: shell("echo hi; exec cat")})
	rec.waitForText(t, "hi")
	if _, err := h.Export(AttachRequest{TermID: "t", ClientID: "sup"}, newRecorder()); !errors.Is(err, ErrExportBusy) {
		t.Fatalf("export with a client attached: %v, want ErrExportBusy", err)
	}
}

func TestUnexportWithoutScrollbackKeepsTheHubs(t *testing.T) {
	h := newTestHub(t, HubOptions{})
	first, _, rec := attach(t, h, AttachRequest{TermID: "t", ClientID: "c", Command: shell("echo early; exec cat")})
	rec.waitForText(t, "early")
	first.Close()
	ex, err := h.Export(AttachRequest{TermID: "t", ClientID: "sup"}, newRecorder())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ex.Replay), "early") {
		t.Fatalf("replay %q, want the output the hub read", ex.Replay)
	}
	readMaster(t, ex).master.Close()
	if err := h.Unexport("t", "sup", nil); err != nil {
		t.Fatal(err)
	}
	_, g, again := attach(t, h, AttachRequest{TermID: "t", ClientID: "again"})
	if out := again.waitForText(t, "early"); g.ReplayBytes == 0 {
		t.Errorf("no replay after an unexport without scrollback; got %q live", out)
	}
}

// A program that ends while its terminal is being handed over: the hub
// closes its master as the program ends, and the hand-over must neither
// fail ("duplicate its master: use of closed file", as it did) nor lose
// what the program wrote last. The exporter reads it through its
// duplicate and hears how the program ended.
func TestExportOfAProgramThatEndsAtOnce(t *testing.T) {
	h := newTestHub(t, HubOptions{KillGrace: 200 * time.Millisecond})
	for i := range 30 {
		exporter := newRecorder()
		ex, err := h.Export(AttachRequest{TermID: fmt.Sprintf("once%d", i), ClientID: "sup", Command: shell("echo bye; exit 3")}, exporter)
		if err != nil {
			t.Fatalf("round %d: %v", i, err)
		}
		readMaster(t, ex).waitForText(t, "bye")
		exporter.waitEnd(t)
		exporter.mu.Lock()
		exits, closes, code := exporter.exits, exporter.closes, exporter.code
		exporter.mu.Unlock()
		if exits != 1 || closes != 0 || code != 3 {
			t.Fatalf("round %d: got %d Exit (code %d), %d Closed; want one Exit(3)", i, exits, code, closes)
		}
	}
}
