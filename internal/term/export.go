package term

import (
	"errors"
	"fmt"
	"os"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/scrollback"
)

// ErrExportBusy is returned by Export for a terminal that has clients or
// is exported already: its output cannot be handed to a single reader.
var ErrExportBusy = errors.New("term: terminal has other readers")

// Exporter hears how an exported terminal ends: Exit once its program has
// ended (the terminal is gone), or Closed when the hub closes first.
// Either is called once, and neither after Unexport.
type Exporter interface {
	Exit(code int, signal string)
	Closed(err error)
}

// Exported is what Export hands over.
type Exported struct {
	// FD is a duplicate of the terminal's master, non-blocking (the
	// open file is shared with the hub's own descriptor). The caller owns
	// it and must close it.
	FD int
	// Replay is the scrollback: every byte of output the hub read, up to
	// the moment it stopped reading, as a joining client would get it.
	Replay []byte
	Grant  Grant
}

type exporter struct {
	clientID string
	to       Exporter
}

// Export hands a terminal's output to one reader outside the hub, starting
// the terminal as Attach would when it is not running: the hub stops
// reading it, after sending what it had read into the scrollback, and
// returns a duplicate of its master and that scrollback. From then on the
// exporter reads the output, types and resizes through its own descriptor,
// and the hub only runs the program: it reports its end to to, and counts
// the terminal as attached (Active). Unexport gives the output back.
//
// The supervisor exports the terminals its WebSocket clients watch, so that
// their output passes through one process instead of two
// (docs/terminal.md). Export fails with ErrExportBusy when the terminal has
// clients or another exporter.
func (h *Hub) Export(req AttachRequest, to Exporter) (Exported, error) {
	if err := req.validate(); err != nil {
		return Exported{}, err
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return Exported{}, ErrHubClosed
	}
	t, created := h.terms[req.TermID], false
	if t == nil {
		var err error
		if t, err = h.startTerminal(req); err != nil {
			h.mu.Unlock()
			return Exported{}, err
		}
		h.terms[req.TermID], created = t, true
	}
	h.mu.Unlock()

	t.mu.Lock()
	if len(t.clients) > 0 || t.exporter != nil {
		t.mu.Unlock()
		return Exported{}, fmt.Errorf("export terminal %q: %w", t.id, ErrExportBusy)
	}
	// The master is duplicated before anything else: a program that ends
	// while the hub hands it over gets its master closed by the hub, and
	// what it wrote last is then read through this duplicate.
	fd, err := t.dupMasterLocked()
	if err != nil {
		t.mu.Unlock()
		return Exported{}, fmt.Errorf("export terminal %q: duplicate its master: %w", t.id, err)
	}
	t.exporter = &exporter{clientID: req.ClientID, to: to}
	ack := make(chan struct{})
	t.exportAck = ack
	t.exportAsked.Store(true)
	t.mu.Unlock()
	// A reader waiting for output notices at once.
	t.master.SetReadDeadline(time.Now())
	select {
	case <-ack:
	case <-t.readDone:
		// The program is gone and its output all read.
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	ex := Exported{
		FD:     fd,
		Replay: t.scroll.Replay(),
		Grant:  Grant{Role: RoleOwner, Cols: t.cols, Rows: t.rows, Created: created, Pid: t.pid},
	}
	ex.Grant.ReplayBytes = len(ex.Replay)
	select {
	case <-t.masterClosed:
		// The program has ended and the hub closed its master: there is
		// nothing to set aside.
	default:
		if err := t.parkLocked(); err != nil {
			unix.Close(fd)
			t.unexportLocked()
			return Exported{}, fmt.Errorf("export terminal %q: %w", t.id, err)
		}
	}
	t.log.Debug("terminal exported", zap.String("client", req.ClientID))
	return ex, nil
}

// Unexport takes a terminal's output back from its exporter, clientID, with
// scrollback as what the exporter keeps of it (its own replay), so that a
// client joining later sees what the exporter's clients saw; nil keeps the
// scrollback the hub had when it exported. The exporter must have stopped
// reading first: the hub reads again at once.
func (h *Hub) Unexport(termID, clientID string, scrollback []byte) error {
	h.mu.Lock()
	t := h.terms[termID]
	h.mu.Unlock()
	if t == nil {
		return fmt.Errorf("unexport terminal %q: %w", termID, ErrDetached)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exporter == nil || t.exporter.clientID != clientID {
		return fmt.Errorf("unexport terminal %q: %q is not its exporter: %w", termID, clientID, ErrDetached)
	}
	if scrollback != nil {
		t.scroll = scrollbackWith(h.opts.ScrollbackBytes, scrollback)
	}
	t.unparkLocked()
	t.unexportLocked()
	t.log.Debug("terminal unexported", zap.String("client", clientID))
	return nil
}

// dupMasterLocked duplicates the master (close-on-exec); the duplicate
// shares its open file, so it reads and writes the same terminal.
func (t *terminal) dupMasterLocked() (int, error) {
	select {
	case <-t.masterClosed:
		return -1, os.ErrClosed
	default:
	}
	var fd int
	var dupErr error
	rc, err := t.master.SyscallConn()
	if err == nil {
		err = rc.Control(func(m uintptr) { fd, dupErr = unix.FcntlInt(m, unix.F_DUPFD_CLOEXEC, 0) })
	}
	if err = errors.Join(err, dupErr); err != nil {
		return -1, err
	}
	return fd, nil
}

// parkLocked moves the master out of the runtime's poller while the
// terminal is exported: registered, every batch of output the exporter
// reads would also wake this process's poller for nothing, which cost an
// exported terminal's client a tenth of its rate. The hub keeps a plain
// descriptor, to read again after Unexport.
func (t *terminal) parkLocked() error {
	fd, err := t.dupMasterLocked()
	if err != nil {
		return fmt.Errorf("set its master aside: %w", err)
	}
	t.master.Close()
	t.master, t.parked = nil, fd
	return nil
}

// unparkLocked gives the master back to the poller.
func (t *terminal) unparkLocked() {
	if t.parked >= 0 {
		// Non-blocking (the open file's flag), so the poller serves it.
		t.master, t.parked = os.NewFile(uintptr(t.parked), "ptmx"), -1
	}
}

// unexportLocked lets the reader read again.
func (t *terminal) unexportLocked() {
	t.exporter = nil
	t.exportAsked.Store(false)
	select {
	case t.resume <- struct{}{}:
	default:
	}
}

// takeExporterLocked removes the exporter, which is to hear of the
// terminal's end, if there is one.
func (t *terminal) takeExporterLocked() Exporter {
	e := t.exporter
	if e == nil {
		return nil
	}
	t.exporter = nil
	return e.to
}

func scrollbackWith(size int, p []byte) *scrollback.Ring {
	r := scrollback.New(size)
	r.Write(p)
	return r
}
