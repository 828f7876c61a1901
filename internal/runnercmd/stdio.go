package runnercmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/oklog/run"
	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/runner"
	"github.com/corral-dev/corral/pkg/wire"
)

// serveStdio is the supervisor's runner: the wire protocol on stdin/stdout,
// control.sock once live, until shutdown or stdin closes.
//
// With dir empty the runner is a spare, started before any session needed
// it so that creating one does not wait for a process to start: it takes
// the session folder the first live.ensure names.
//
// termFDs, when not -1, is an inherited Unix socket on which the runner
// hands the supervisor the terminals it asks for (term.open with export).
//
// grace, when positive, lets a live session outlive its supervisor: the
// runner then waits that long for another to re-attach on runner.sock
// (attach.go).
//
// ownCgroup says the runner's cgroup is a leaf of its own: with no
// supervisor left to sweep it, the runner kills the rest of it on its way
// out.
func serveStdio(log *zap.Logger, opts runner.Options, dir string, termFDs int, grace time.Duration, ownCgroup bool) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sess stdioSession
	defer sess.release()
	spare := dir == ""
	if !spare {
		if err := sess.claim(dir); err != nil {
			log.Error("session folder", zap.Error(err))
			return 1
		}
		opts.Dir = sess.dir
		opts.Spec.ID = filepath.Base(sess.dir)
	}
	var g run.Group
	terms := newTerminals(opts, log)
	if termFDs >= 0 {
		conn, err := masterChannel(termFDs)
		if err != nil {
			log.Error("terminal hand-over channel", zap.Error(err))
			return 2
		}
		defer conn.Close()
		terms.SetMasterChannel(conn)
	}
	build := func(spec wire.Spec, secrets map[string]string, o runner.Options) (*runner.Runner, error) {
		if err := sess.claim(o.Dir); err != nil {
			return nil, err
		}
		o.Spec = spec
		o.Credentials = secrets
		o.EngineConfig = engineCache(sess.dir)
		return runner.New(o)
	}
	// A spare may be asked to start the engine of the session expected
	// next in the folder reserved for it (runner.Prewarm).
	prewarm := func(ctx context.Context, m *wire.Prewarm, o runner.Options) (*runner.WarmEngine, error) {
		o.EngineConfig = engineCache(m.Dir)
		return runner.Prewarm(ctx, o, m.Spec, m.Dir, m.Credentials)
	}
	link := &runner.Link{Build: build, Prewarm: prewarm, Options: opts, Log: log, Terminals: terms, Grace: grace}
	ctl := &controlServer{ctx: ctx, log: log}
	defer ctl.close()
	att := &attachServer{ctx: ctx, log: log, link: link, terms: terms}
	defer att.close()
	if grace > 0 {
		// A write to the gone supervisor's pipes (stdout, stderr) must
		// fail, not kill the process as SIGPIPE does by default on
		// descriptors 1 and 2. Caught, not ignored: the programs the
		// runner starts get SIGPIPE at its default.
		pipes := make(chan os.Signal, 1)
		signal.Notify(pipes, syscall.SIGPIPE)
		defer signal.Stop(pipes)
	}
	link.OnLive = func(r *runner.Runner) {
		terms.SetCwd(r.Spec().Cwd)
		ctl.serve(r)
		if grace > 0 {
			att.serve(r.Dir())
		}
	}
	// Signals are caught from here on, before a spare's warm-up begins
	// (run.SignalHandler would start catching them only once its actor
	// runs).
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stopSignals...)
	defer signal.Stop(sigs)
	g.Add(func() error {
		select {
		case sig := <-sigs:
			return run.SignalError{Signal: sig}
		case <-ctx.Done():
			return nil
		}
	}, func(error) { cancel() })
	g.Add(func() error {
		// A spare warms up before it answers hello. It does so here,
		// where a SIGTERM (a supervisor shutting down as the spare
		// starts) waits for the warm-up to remove its scratch folder.
		if spare {
			if err := runner.Warm(ctx, opts); err != nil && ctx.Err() == nil {
				log.Warn("spare runner did not warm up", zap.Error(err))
			}
			if ctx.Err() != nil {
				return nil
			}
		}
		// Serve blocks reading stdin, which a signal cannot interrupt,
		// so it runs on its own; the process exits once the runner is
		// closed.
		served := make(chan error, 1)
		go func() { served <- link.Serve(ctx, pollableStdin(), os.Stdout) }()
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
			return nil
		}
	}, func(error) { cancel() })
	err := g.Run()
	cancel()
	link.Close()
	if link.Orphaned() {
		// No supervisor is left to sweep this runner's group after it
		// exits: what its programs left behind goes now.
		if n := proc.KillOwnGroup(); n > 0 {
			log.Warn("killed what was left in the runner's process group", zap.Int("processes", n))
		}
		if ownCgroup {
			n, err := cgroup.KillOthers(10 * time.Second)
			if err != nil {
				log.Warn("the runner's cgroup was not swept", zap.Error(err))
			} else if n > 0 {
				log.Warn("killed what was left in the runner's cgroup", zap.Int("processes", n))
			}
		}
	}
	var sig run.SignalError
	if err != nil && !errors.As(err, &sig) {
		log.Error("runner", zap.Error(err))
		return 1
	}
	return 0
}

// engineCache is the runner's own engine settings for the session in dir:
// sessions share one unpacked copy of an engine CLI's package (hundreds of
// MB) in <state>/cache, beside <state>/sessions.
func engineCache(dir string) map[string]string {
	return map[string]string{"cacheDir": filepath.Join(filepath.Dir(filepath.Dir(dir)), "cache")}
}

// stdioSession is the session folder a supervisor's runner holds: named on
// the command line, or taken by a spare at its live.ensure.
type stdioSession struct {
	mu  sync.Mutex
	dir string
	pid string // the pid file to remove at exit
}

// claim makes dir the runner's session folder, once: its pid file is
// written (the supervisor's sweep of stale runners reads it) and it becomes
// the working directory, as for a runner started with --session-dir.
func (s *stdioSession) claim(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return wire.Errorf(wire.CodeBadRequest, "session folder %q: %v", dir, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir != "" {
		if s.dir != abs {
			return wire.Errorf(wire.CodeConflict, "this runner holds session folder %s, not %s", s.dir, abs)
		}
		return nil
	}
	c, err := claimDir(abs)
	if err != nil {
		return err
	}
	if err := os.Chdir(abs); err != nil {
		c.release()
		return fmt.Errorf("session folder: %w", err)
	}
	s.dir, s.pid = c.dir, c.pid
	return nil
}

func (s *stdioSession) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pid != "" {
		os.Remove(s.pid)
	}
}

// claimed is a session folder this process has written its pid file in.
type claimed struct{ dir, pid string }

func (c claimed) release() { os.Remove(c.pid) }

// claimDir creates the session folder dir when it is missing and writes
// this process's pid file in it.
func claimDir(dir string) (claimed, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return claimed{}, fmt.Errorf("session folder: %w", err)
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return claimed{}, fmt.Errorf("session folder: %w", err)
	}
	pid := filepath.Join(abs, runner.PidFile)
	if err := os.WriteFile(pid, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return claimed{}, fmt.Errorf("write pid file: %w", err)
	}
	return claimed{dir: abs, pid: pid}, nil
}

// controlServer serves a live session's control.sock, moving it when a fork
// moves the session to a new folder.
type controlServer struct {
	ctx    context.Context
	log    *zap.Logger
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
}

func (c *controlServer) serve(r *runner.Runner) {
	// A fork calls this from a command served on the old socket, so the
	// old server is told to stop but not waited for.
	c.mu.Lock()
	if c.cancel != nil {
		c.cancel()
	}
	c.mu.Unlock()
	ln, err := runner.ListenControl(r.Dir())
	if err != nil {
		c.log.Error("control socket", zap.Error(err))
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	done := make(chan struct{})
	c.mu.Lock()
	c.cancel, c.done = cancel, done
	c.mu.Unlock()
	go func() {
		defer close(done)
		if err := runner.ServeControl(ctx, ln, r.Do, c.log); err != nil {
			c.log.Error("control socket", zap.Error(err))
		}
	}()
}

func (c *controlServer) close() {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.cancel, c.done = nil, nil
	c.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// masterChannel returns inherited descriptor fd as the Unix socket the
// supervisor takes terminals over on.
func masterChannel(fd int) (*net.UnixConn, error) {
	f := os.NewFile(uintptr(fd), "term-fds")
	if f == nil {
		return nil, fmt.Errorf("descriptor %d is not open", fd)
	}
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("descriptor %d: %w", fd, err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("descriptor %d is not a Unix socket", fd)
	}
	return uc, nil
}
