package term

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/scrollback"
)

// readBufferBytes is the most output the reader takes in one batch, over as
// many reads of the pseudo-terminal as it takes (each hands out at most
// 4 KiB). It is at most MaxDataBytes, so a batch is one Sink.Data.
const readBufferBytes = MaxDataBytes

// terminal is one program on one pseudo-terminal and the clients attached
// to it.
type terminal struct {
	id  string
	hub *Hub
	log *zap.Logger
	cmd *exec.Cmd
	pid int // the program; also its session and process group id

	// reapMu orders signals to the program's session before the program's
	// reap: held for reading while the session is signalled, for writing
	// while the program is reaped. Once reaped (and its session empty) its
	// pid, which is also the group's and the session's id, is free for the
	// kernel to give to another process, which may lead a group or a
	// session of its own (a runner does): a signal to -pid then would hit
	// it. So a reaped terminal signals nothing.
	reapMu  sync.RWMutex
	reaped  bool
	waitErr error // cmd.Wait's, set with reaped

	closeMaster  sync.Once
	masterClosed chan struct{} // closed with the master
	inputMu      sync.Mutex    // one Input write at a time
	readDone     chan struct{} // the reader saw the end of output
	done         chan struct{} // the program and its session are gone
	room         chan struct{} // capacity 1: a client took output or left (Pace)

	inline []*Client // the reader's scratch: clients taking a batch inline

	exportAsked atomic.Bool   // the reader is to leave the output to an exporter
	exportAck   chan struct{} // closed by the reader once it stopped, for Export
	resume      chan struct{} // capacity 1: the output is the reader's again

	mu       sync.Mutex
	clients  map[string]*Client
	owner    *Client
	scroll   *scrollback.Ring
	cols     uint16
	rows     uint16
	exporter *exporter // reads the output instead of the reader (Export)
	// master is the pseudo-terminal's master, served by the poller, except
	// while the terminal is exported: then it is nil and parked holds it.
	master *os.File
	parked int
}

func (h *Hub) startTerminal(req AttachRequest) (*terminal, error) {
	argv := req.Command
	if len(argv) == 0 {
		argv = h.opts.Command
	}
	dir := req.Cwd
	if dir == "" {
		dir = h.opts.Dir
	}
	cols, rows := req.Cols, req.Rows
	if cols == 0 || rows == 0 {
		cols, rows = DefaultCols, DefaultRows
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = terminalEnv(h.opts.Env, req.Env)
	master, err := startPTY(cmd, cols, rows)
	if err != nil {
		return nil, &StartError{TermID: req.TermID, Command: argv, Err: err}
	}
	t := &terminal{
		id:           req.TermID,
		hub:          h,
		cmd:          cmd,
		pid:          cmd.Process.Pid,
		master:       master,
		parked:       -1,
		masterClosed: make(chan struct{}),
		readDone:     make(chan struct{}),
		done:         make(chan struct{}),
		room:         make(chan struct{}, 1),
		resume:       make(chan struct{}, 1),
		clients:      make(map[string]*Client),
		scroll:       scrollback.New(h.opts.ScrollbackBytes),
		cols:         cols,
		rows:         rows,
	}
	t.log = h.log.With(zap.String("term", t.id), zap.Int("pid", t.pid))
	t.log.Info("terminal started", zap.Strings("command", argv), zap.String("dir", dir))
	h.wg.Add(2)
	go t.read()
	go t.run()
	return t, nil
}

// terminalEnv is base plus extra, extra winning, with a TERM the attached
// terminal emulators understand unless either sets one.
func terminalEnv(base, extra []string) []string {
	env := make([]string, 0, len(base)+len(extra)+1)
	env = append(env, base...)
	env = append(env, extra...)
	for _, kv := range env {
		if strings.HasPrefix(kv, "TERM=") {
			return env
		}
	}
	return append(env, "TERM="+DefaultTERM)
}

// join attaches a new client. The scrollback snapshot and the registration
// happen under the lock the reader holds while it records and fans out
// output, so every byte lands either in the replay or in the live queue,
// never both and never neither.
func (t *terminal) join(req AttachRequest, sink Sink, created bool) (*Client, Grant, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.exporter != nil {
		return nil, Grant{}, fmt.Errorf("attach client %q to terminal %q: %w", req.ClientID, t.id, ErrExported)
	}
	if _, taken := t.clients[req.ClientID]; taken {
		return nil, Grant{}, fmt.Errorf("attach client %q to terminal %q: %w", req.ClientID, t.id, ErrClientExists)
	}
	role := RoleReadOnly
	if req.Role == RoleOwner && t.owner == nil {
		role = RoleOwner
	}
	replay := t.scroll.Replay()
	c := &Client{
		id:     req.ClientID,
		role:   role,
		term:   t,
		sink:   sink,
		replay: replay,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		// The replay goes first, through the pump.
		pumping: true,
	}
	c.inline, _ = sink.(InlineSink)
	t.clients[c.id] = c
	if role == RoleOwner {
		t.owner = c
		// The owner's window decides the size of a terminal it joins.
		if !created && req.Cols > 0 && req.Rows > 0 && (req.Cols != t.cols || req.Rows != t.rows) {
			if err := t.resizeLocked(req.Cols, req.Rows); err != nil {
				t.log.Warn("resize for new owner", zap.String("client", c.id), zap.Error(err))
			}
		}
	}
	c.grant = Grant{Role: role, Cols: t.cols, Rows: t.rows, Created: created, Pid: t.pid, ReplayBytes: len(replay)}
	t.log.Debug("client attached", zap.String("client", c.id), zap.String("role", string(role)))
	return c, c.grant, nil
}

// detach removes c from the terminal, freeing the owner seat if it held it,
// and ends its stream with e unless it already ended.
func (t *terminal) detach(c *Client, e *ending) {
	t.mu.Lock()
	if t.clients[c.id] == c {
		delete(t.clients, c.id)
		t.log.Debug("client detached", zap.String("client", c.id), zap.Error(e.err))
	}
	if t.owner == c {
		t.owner = nil
	}
	t.mu.Unlock()
	c.end(e)
	t.pokeRoom()
}

func (t *terminal) active() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients) > 0 || t.exporter != nil
}

func (t *terminal) clientCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.clients)
}

func (t *terminal) client(id string) (*Client, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	c, ok := t.clients[id]
	return c, ok
}

// read copies the program's output into the scrollback and to every
// client until the terminal side has no holders left (EIO) or the master is
// closed. While the terminal is exported (Hub.Export), it leaves the output
// to the exporter and waits.
func (t *terminal) read() {
	defer t.hub.wg.Done()
	defer close(t.readDone)
	r := OutputReader{
		Buf:     make([]byte, readBufferBytes),
		Deliver: t.broadcast,
		Pause:   t.exportAsked.Load,
	}
	if t.hub.opts.Pace {
		r.Ready = t.waitForRoom
	}
	for {
		t.mu.Lock()
		r.Master = t.master
		t.mu.Unlock()
		if r.Master == nil {
			// Closed while exported.
			return
		}
		err := r.Run()
		if err == nil {
			// Paused for an export: the exporter reads from now on.
			close(t.exportAck)
			select {
			case <-t.resume:
				continue
			case <-t.masterClosed:
				return
			}
		}
		select {
		case <-t.masterClosed:
		default:
			if !errors.Is(err, syscall.EIO) && !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				t.log.Warn("read terminal output", zap.Error(err))
			}
		}
		return
	}
}

// waitForRoom holds the reader (HubOptions.Pace) while every client is too
// far behind to take another full read. It reports false once the master is
// closed.
func (t *terminal) waitForRoom() bool {
	for t.everyClientBehind() {
		select {
		case <-t.room:
		case <-t.masterClosed:
			return false
		}
	}
	return true
}

func (t *terminal) everyClientBehind() bool {
	room := max(t.hub.opts.ClientBufferBytes-readBufferBytes, 0)
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.clients {
		if c.queued() <= room {
			return false
		}
	}
	return len(t.clients) > 0
}

// pokeRoom wakes a reader waiting for room.
func (t *terminal) pokeRoom() {
	select {
	case t.room <- struct{}{}:
	default:
	}
}

// broadcast records p, the reader's buffer, and hands it to every client:
// inline to a client whose Sink takes it on this goroutine (InlineSink) and
// that has nothing queued, and queued for the others. Queues hold a copy,
// shared by every client and never modified; p itself is reused for the
// next batch once broadcast returns. A client already bound bytes behind
// is cut here rather than waited for; with HubOptions.Pace, unless every
// client is.
func (t *terminal) broadcast(p []byte) {
	var shared []byte // p's copy for the queues, made on first need
	queued := func() []byte {
		if shared == nil {
			shared = bytes.Clone(p)
		}
		return shared
	}
	bound := t.hub.opts.ClientBufferBytes
	inline := t.inline[:0]
	t.mu.Lock()
	t.scroll.Write(p)
	if t.hub.opts.Pace && t.everyClientFullLocked(len(p), bound) {
		// The reader waited for room first, so this passes the bound by
		// less than one read.
		bound = math.MaxInt
	}
	for id, c := range t.clients {
		if c.claimInline() {
			inline = append(inline, c)
			continue
		}
		if c.enqueue(queued(), bound) {
			continue
		}
		delete(t.clients, id)
		if t.owner == c {
			t.owner = nil
		}
		c.end(&ending{err: fmt.Errorf("client %q: %w", id, ErrSlowClient)})
		t.log.Info("slow client cut", zap.String("client", id), zap.Int("bound", bound))
	}
	t.mu.Unlock()
	// Outside the lock: a Sink's delivery must not hold up attaches,
	// resizes and detaches.
	for i, c := range inline {
		c.deliverInline(p, queued)
		inline[i] = nil
	}
	t.inline = inline[:0]
}

// everyClientFullLocked reports whether n more bytes would put every client
// past bound.
func (t *terminal) everyClientFullLocked(n, bound int) bool {
	for _, c := range t.clients {
		if c.queued()+n <= bound {
			return false
		}
	}
	return true
}

// write types p into the terminal.
func (t *terminal) write(p []byte) error {
	t.inputMu.Lock()
	defer t.inputMu.Unlock()
	t.mu.Lock()
	master := t.master
	t.mu.Unlock()
	if master == nil {
		return fmt.Errorf("term: write input to %q: %w", t.id, ErrExported)
	}
	if err := Type(master, p, t.hub.opts.InputTimeout); err != nil {
		return fmt.Errorf("term: write input to %q: %w", t.id, err)
	}
	return nil
}

func (t *terminal) resize(cols, rows uint16) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.resizeLocked(cols, rows); err != nil {
		return fmt.Errorf("term: resize %q: %w", t.id, err)
	}
	return nil
}

func (t *terminal) resizeLocked(cols, rows uint16) error {
	if t.master == nil {
		return ErrExported
	}
	if err := setWinsize(t.master, cols, rows); err != nil {
		return err
	}
	t.cols, t.rows = cols, rows
	return nil
}

func (t *terminal) closeMasterOnce() {
	t.closeMaster.Do(func() {
		// Marked first, so the reader knows its failing read is this.
		close(t.masterClosed)
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.master != nil {
			t.master.Close()
		}
		if t.parked >= 0 {
			unix.Close(t.parked)
			t.parked = -1
		}
	})
}

// run waits for the program, clears away whatever it left in its session,
// and tells the clients how it ended. Output is fully drained before Exit is
// delivered, so Exit is always the last thing a client sees.
func (t *terminal) run() {
	defer t.hub.wg.Done()
	defer close(t.done)
	// The program is waited for without being reaped where the system
	// allows it: its zombie keeps its pid, so the group and session ids
	// cannot be reused while the session is hung up below (reapMu).
	if err := waitExited(t.pid); err != nil {
		t.log.Debug("wait for the terminal program without reaping it", zap.Error(err))
		t.reap()
	}
	// What the program leaves in its session is hung up, as when a terminal
	// window closes; it would otherwise hold the terminal open forever.
	sessionErr := t.endSession()
	t.reap()
	final := exitOf(t.cmd.ProcessState)
	t.log.Info("terminal program ended", zap.Int("code", final.code), zap.String("signal", final.signal), zap.NamedError("wait", t.waitErr))
	if sessionErr != nil {
		t.log.Warn("end terminal session", zap.Error(sessionErr))
	}
	// A process that left the session but kept the terminal open still
	// blocks the reader; closing the master releases it. An exported
	// terminal's reader waits for nothing: the exporter drains the output.
	t.mu.Lock()
	exported := t.exporter != nil
	t.mu.Unlock()
	if !exported {
		grace := time.NewTimer(t.hub.opts.KillGrace)
		select {
		case <-t.readDone:
		case <-grace.C:
			t.log.Warn("terminal still held open after its session ended; closing it")
		}
		grace.Stop()
	}
	t.closeMasterOnce()
	<-t.readDone

	t.hub.forget(t)
	t.mu.Lock()
	clients := t.clients
	t.clients, t.owner = map[string]*Client{}, nil
	to := t.takeExporterLocked()
	t.mu.Unlock()
	for _, c := range clients {
		c.end(final)
	}
	if to != nil {
		to.Exit(final.code, final.signal)
	}
	t.pokeRoom()
}

// reap collects the program's exit status, once. Signals to its session
// stop here (reapMu).
func (t *terminal) reap() {
	t.reapMu.Lock()
	defer t.reapMu.Unlock()
	if !t.reaped {
		t.waitErr = t.cmd.Wait()
		t.reaped = true
	}
}

func exitOf(ps *os.ProcessState) *ending {
	if ps == nil {
		return &ending{exited: true, code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return &ending{exited: true, code: -1, signal: unix.SignalName(ws.Signal())}
	}
	return &ending{exited: true, code: ps.ExitCode()}
}

// shutdown ends the terminal for good: clients are told ErrHubClosed, the
// session is hung up and then killed, and shutdown returns once every
// process and goroutine of the terminal is gone. The master stays open
// meanwhile: the reader drains (into the scrollback only) what the program
// prints while it exits, and run needs the reader's end to know the
// terminal side has been let go.
func (t *terminal) shutdown() error {
	t.mu.Lock()
	clients := t.clients
	t.clients, t.owner = map[string]*Client{}, nil
	to := t.takeExporterLocked()
	t.mu.Unlock()
	for _, c := range clients {
		c.end(&ending{err: ErrHubClosed})
	}
	if to != nil {
		to.Closed(ErrHubClosed)
	}
	t.pokeRoom()
	err := t.endSession()
	<-t.done
	return err
}

// sessionPoll is how often endSession looks for survivors. Processes that
// are not the runner's children cannot be waited for, only looked for.
const sessionPoll = 10 * time.Millisecond

// endSession sends SIGHUP to every process of the terminal's session and
// SIGKILL to any still running HubOptions.KillGrace later, and returns once
// the session is empty (or a further KillGrace has passed). Until then the
// caller does not reap the program, whose zombie keeps the session's id
// from being reused while its members die.
func (t *terminal) endSession() error {
	err := t.signalSession(unix.SIGHUP)
	if t.awaitSessionEnd(t.hub.opts.KillGrace) {
		return err
	}
	t.log.Info("terminal session outlived its grace period; killing it", zap.Duration("grace", t.hub.opts.KillGrace))
	err = errors.Join(err, t.signalSession(unix.SIGKILL))
	if !t.awaitSessionEnd(t.hub.opts.KillGrace) {
		t.log.Warn("terminal session still there after SIGKILL", zap.Duration("grace", t.hub.opts.KillGrace))
	}
	return err
}

// awaitSessionEnd waits up to d for the session to be empty, and reports
// whether it is. Processes that are not the runner's children cannot be
// waited for, only looked for (sessionPoll).
func (t *terminal) awaitSessionEnd(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for t.sessionAlive() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(sessionPoll)
	}
	return true
}

// sessionAlive reports whether any process of the program's session still
// runs, as far as can be known without risk: after the reap, the session's
// id may name someone else's.
func (t *terminal) sessionAlive() bool {
	t.reapMu.RLock()
	defer t.reapMu.RUnlock()
	return !(t.reaped && signalsStopAtReap) && sessionAlive(t.pid)
}

// signalSession signals the program's process group and every other process
// still in its session. The kernel does not reuse a pid while it names a
// live or unreaped process, or a group or session with a live member, so
// the signal cannot stray while the program is not reaped; after that it
// is not sent (reapMu).
func (t *terminal) signalSession(sig syscall.Signal) error {
	t.reapMu.RLock()
	defer t.reapMu.RUnlock()
	if t.reaped && signalsStopAtReap {
		return nil
	}
	var errs []error
	if err := unix.Kill(-t.pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		errs = append(errs, fmt.Errorf("signal process group %d: %w", t.pid, err))
	}
	members, err := sessionMembers(t.pid)
	if err != nil {
		errs = append(errs, err)
	}
	for _, pid := range members {
		if err := unix.Kill(pid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
			errs = append(errs, fmt.Errorf("signal session member %d: %w", pid, err))
		}
	}
	return errors.Join(errs...)
}
