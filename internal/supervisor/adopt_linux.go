package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/internal/supervisor/termhost"
	"github.com/corral-dev/corral/internal/unixsock"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// A runner that outlived its supervisor (Config.RunnerGrace) waits on its
// session folder's runner.sock for the next one. A Manager starting on the
// same state folder finds it by its runner.pid (sweep_linux.go), connects,
// checks that the peer is that very process of this user (SO_PEERCRED),
// hands it a log pipe and a terminal hand-over channel of its own
// (SCM_RIGHTS on the first byte), and says hello with the first seq its
// copy of the session's log lacks, so the runner mirrors every event from
// there on: none lost, none twice (docs/wire.md, *Re-attaching*). The
// runner is not this process's child: its end is learnt from a pidfd.

// adoptTimeout bounds one re-attach: connect, handshake, the runner's
// replay of the events this supervisor lacks.
const adoptTimeout = 15 * time.Second

// adopt re-attaches to runner pid, left running by a previous supervisor
// for session id, and makes the session live on it.
func (m *Manager) adopt(id string, pid int) error {
	dir := m.dir(id)
	spec, err := readSpec(dir, id)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(m.stopping, adoptTimeout)
	defer cancel()
	claim, err := m.claim(ctx, id)
	if err != nil {
		return fmt.Errorf("claim: %w", err)
	}
	c, err := m.attachChild(ctx, id, pid, m.leafOf(pid))
	if err != nil {
		if claim != nil {
			claim.Release()
		}
		return err
	}
	c.setEngine(spec.Engine)
	c.madeLive.Store(true)
	e := &entry{ids: []string{id}, ready: make(chan struct{}), child: c, lastUsed: m.cfg.Now()}
	if claim != nil {
		e.claims = append(e.claims, claim)
	}
	close(e.ready)
	m.mu.Lock()
	m.entries[id] = e
	m.mu.Unlock()
	m.publishLife(id, api.Lifecycle{Type: api.LifeLive, Reason: "reattached"})
	c.log.Info("re-attached to a runner left by a previous supervisor")
	return nil
}

// attachChild connects to runner pid of session id and completes the
// handshake; on failure nothing of it is left open. leaf is the runner's
// cgroup, kept and swept at its end (nil: none).
func (m *Manager) attachChild(ctx context.Context, id string, pid int, leaf *cgroup.Leaf) (*child, error) {
	dir := m.dir(id)
	conn, err := unixsock.Dial(ctx, filepath.Join(dir, sessiondir.RunnerSock))
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	if err := checkRunnerPeer(conn, pid); err != nil {
		conn.Close()
		return nil, err
	}
	// The pidfd first: from here on, pid cannot be another process.
	pidfd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("pidfd of runner %d: %w", pid, err)
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		conn.Close()
		unix.Close(pidfd)
		return nil, fmt.Errorf("runner log pipe: %w", err)
	}
	fds := []int{int(stderrW.Fd())}
	masters, theirs, err := termhost.NewMasterChannel()
	if err != nil {
		m.log.Debug("terminals will not be handed over", zap.Error(err))
	} else {
		fds = append(fds, int(theirs.Fd()))
	}
	_, _, err = conn.WriteMsgUnix([]byte{0}, unix.UnixRights(fds...), nil)
	stderrW.Close()
	if theirs != nil {
		theirs.Close()
	}
	if err != nil {
		conn.Close()
		unix.Close(pidfd)
		stderrR.Close()
		if masters != nil {
			masters.Close()
		}
		return nil, fmt.Errorf("hand the runner its pipes: %w", err)
	}

	log := m.log.With(zap.String("session", id), zap.Int("pid", pid))
	c := &child{
		log:     log,
		pid:     pid,
		leaf:    leaf,
		path:    filepath.Join(dir, sessiondir.RunnerSock),
		stdin:   conn,
		stdout:  conn,
		enc:     wire.NewEncoder(conn),
		tail:    proc.NewTail(stderrTailLines),
		hooks:   m.childHooks(),
		buffers: &m.termBufs,
		masters: masters,
		ready:   make(chan *wire.Ready, 1),
		exited:  make(chan struct{}),
		done:    make(chan struct{}),
		pending: map[string]chan wire.Message{},
		terms:   map[termKey]func(wire.Message){},
		session: id,
		now:     m.cfg.Now,
	}
	sink := &stderrSink{tail: c.tail, session: c.currentSession}
	sink.start(m.log.Named("runner").With(zap.Int("pid", pid)))
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		io.Copy(sink, stderrR)
	}()
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.read(conn, m.cfg.MaxLine)
	}()
	go c.waitAdopted(pidfd, readerDone, stderrR, logDone, m.cfg.KillGrace)

	// What this supervisor has of the log now; the runner mirrors the rest.
	from := lastLoggedSeq(filepath.Join(dir, eventsFile)) + 1
	if err := c.handshake(ctx, from); err != nil {
		c.abort(m.cfg.KillGrace)
		return nil, err
	}
	return c, nil
}

// waitAdopted waits for an adopted runner's end: its process exits (the
// pidfd becomes readable), or it closes the link, after which it has
// killGrace to exit before its group is stopped. Then it tears the link
// down as wait does for a runner of this process.
func (c *child) waitAdopted(pidfd int, readerDone <-chan struct{}, stderr io.Closer, logDone <-chan struct{}, killGrace time.Duration) {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
		for {
			if _, err := unix.Poll(fds, -1); err == nil || !errors.Is(err, unix.EINTR) {
				return
			}
		}
	}()
	select {
	case <-gone:
	case <-readerDone:
		c.mu.Lock()
		detached := c.detached
		c.mu.Unlock()
		if detached {
			// Let go of for the next supervisor: not ours to end.
			<-gone
			break
		}
		select {
		case <-gone:
		case <-time.After(killGrace):
			c.log.Warn("re-attached runner closed its link but did not exit; stopping it")
			proc.StopGroupOf(c.pid, gone, killGrace)
		}
	}
	close(c.exited)
	unix.Close(pidfd)
	select {
	case <-logDone:
	case <-time.After(time.Second):
		// A program the runner started still holds its stderr.
	}
	stderr.Close()
	<-logDone
	c.finish(readerDone, -1, "")
}

// checkRunnerPeer makes sure the process on the other end of conn is
// runner pid, of this supervisor's user.
func checkRunnerPeer(conn *net.UnixConn, pid int) error {
	peer, uid, err := proc.PeerCredentials(conn)
	if err != nil {
		return err
	}
	if peer != pid || uid != os.Geteuid() {
		return fmt.Errorf("runner socket is served by pid %d of uid %d, not runner %d of uid %d", peer, uid, pid, os.Geteuid())
	}
	return nil
}
