package runnercmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/internal/unixsock"
)

// attachWait bounds how long a re-attaching supervisor's connection waits
// for the link to let go of the previous supervisor (whose end the runner
// may not have read yet), and for the supervisor's first message.
const attachWait = 10 * time.Second

// attachServer listens on a live session's runner.sock for a supervisor
// that re-attaches after the runner's own went away (docs/wire.md,
// *Re-attaching*), moving it when a fork moves the session. Only a peer
// running as the runner's own user (SO_PEERCRED) is let in; the socket is
// mode 0600 in the session folder (0700) besides.
type attachServer struct {
	ctx   context.Context
	log   *zap.Logger
	link  *runner.Link
	terms *runner.Terminals

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func (a *attachServer) serve(dir string) {
	a.close()
	ln, err := runner.ListenAttach(dir)
	if err != nil {
		a.log.Error("runner socket: this session cannot outlive its supervisor", zap.Error(err))
		return
	}
	ctx, cancel := context.WithCancel(a.ctx)
	done := make(chan struct{})
	a.mu.Lock()
	a.cancel, a.done = cancel, done
	a.mu.Unlock()
	go func() {
		defer close(done)
		a.accept(ctx, ln)
	}()
}

func (a *attachServer) accept(ctx context.Context, ln *unixsock.Listener) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				a.log.Error("runner socket", zap.Error(err))
			}
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if !a.take(ctx, c) {
				c.Close()
			}
		}()
	}
}

// take checks a connection's peer, reads the descriptors it brings and
// hands it to the link; false: refused (the caller closes it).
func (a *attachServer) take(ctx context.Context, c *net.UnixConn) bool {
	if err := checkPeer(c); err != nil {
		a.log.Warn("refused a connection on the runner socket", zap.Error(err))
		return false
	}
	c.SetReadDeadline(time.Now().Add(attachWait))
	stderr, masters, err := readAttachFDs(c)
	c.SetReadDeadline(time.Time{})
	if err != nil {
		a.log.Warn("re-attaching supervisor: bad first message", zap.Error(err))
		return false
	}
	prepare := func() {
		if stderr >= 0 {
			// The runner's log lines (and a panic's) go to the new
			// supervisor from here on.
			if err := moveToStderr(stderr); err != nil {
				a.log.Warn("re-attaching supervisor: take its log pipe", zap.Error(err))
			}
			unix.Close(stderr)
		}
		if masters != nil && a.terms != nil {
			a.terms.SetMasterChannel(masters)
		} else if masters != nil {
			masters.Close()
		}
	}
	wctx, cancel := context.WithTimeout(ctx, attachWait)
	defer cancel()
	if a.link.Attach(wctx, runner.Attachment{Conn: c, Prepare: prepare}) {
		return true
	}
	a.log.Warn("re-attaching supervisor refused: the runner still has one")
	if stderr >= 0 {
		unix.Close(stderr)
	}
	if masters != nil {
		masters.Close()
	}
	return false
}

// checkPeer lets in only a process of this runner's own user: the state
// folder's owner.
func checkPeer(c *net.UnixConn) error {
	pid, uid, err := proc.PeerCredentials(c)
	if err != nil {
		return err
	}
	if uid != os.Geteuid() {
		return fmt.Errorf("peer pid %d runs as uid %d, not %d", pid, uid, os.Geteuid())
	}
	return nil
}

// readAttachFDs reads a re-attaching supervisor's first message: one byte
// carrying, as SCM_RIGHTS, its log pipe (for the runner's stderr) and,
// optionally, its terminal hand-over channel. -1 and nil: not sent.
func readAttachFDs(c *net.UnixConn) (stderr int, masters *net.UnixConn, err error) {
	stderr = -1
	var b [1]byte
	oob := make([]byte, unix.CmsgSpace(2*4))
	n, oobn, _, _, err := c.ReadMsgUnix(b[:], oob)
	if err != nil {
		return -1, nil, err
	}
	if n != 1 {
		return -1, nil, errors.New("no attach byte")
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return -1, nil, fmt.Errorf("control message: %w", err)
	}
	var fds []int
	for _, m := range msgs {
		got, err := unix.ParseUnixRights(&m)
		if err == nil {
			fds = append(fds, got...)
		}
	}
	for i, fd := range fds {
		unix.CloseOnExec(fd)
		switch i {
		case 0:
			stderr = fd
		case 1:
			f := os.NewFile(uintptr(fd), "term-fds")
			conn, cerr := net.FileConn(f)
			f.Close()
			if uc, ok := conn.(*net.UnixConn); cerr == nil && ok {
				masters = uc
			} else if conn != nil {
				conn.Close()
			}
		default:
			unix.Close(fd)
		}
	}
	return stderr, masters, nil
}

func (a *attachServer) close() {
	a.mu.Lock()
	cancel, done := a.cancel, a.done
	a.cancel, a.done = nil, nil
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}
