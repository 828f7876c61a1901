package enginetest

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/engine"
)

// Prewarmer is an engine that starts its process before its session
// exists (the runner's optional interface).
type Prewarmer interface {
	Prewarm(ctx context.Context, opts engine.StartOptions) error
}

// PrewarmConfig says how to test an engine's Prewarm.
type PrewarmConfig struct {
	// NewRig prepares a rig whose scenario answers one turn with Answer.
	NewRig func(t *testing.T) *Rig
	Answer string
	// PID is the process id of the engine's CLI process: the warm one
	// before Start, the session's after; 0 for none.
	PID func(engine.Engine) int
	// AnyCwd says a warm process serves a session in another cwd.
	AnyCwd bool
}

// TestPrewarm checks an engine's Prewarm against its real CLI: a session
// of the shape the process was started for adopts it and answers; one with
// another key (or, unless AnyCwd, another cwd) starts a process of its own
// and the warm one is stopped; a warm process that died is replaced by a
// cold start; an engine closed before Start leaves no process.
func TestPrewarm(t *testing.T, cfg PrewarmConfig) {
	warm := func(t *testing.T, r *Rig) (engine.Engine, int) {
		t.Helper()
		eng := r.cfg.New()
		if r.cfg.Prepare != nil {
			r.cfg.Prepare(eng)
		}
		t.Cleanup(func() { eng.Close() })
		opts := r.Opts
		opts.Host = nil
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		defer cancel()
		if err := eng.(Prewarmer).Prewarm(ctx, opts); err != nil {
			t.Fatalf("Prewarm: %v", Describe(err))
		}
		pid := cfg.PID(eng)
		if pid == 0 {
			t.Fatal("no process after Prewarm")
		}
		return eng, pid
	}
	begin := func(t *testing.T, r *Rig, eng engine.Engine, opts engine.StartOptions) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
		defer cancel()
		id, err := eng.Start(ctx, opts)
		if err != nil {
			t.Fatalf("Start: %v", Describe(err))
		}
		r.Eng, r.ConvID = eng, id
	}
	start := func(t *testing.T, r *Rig, eng engine.Engine, opts engine.StartOptions) {
		t.Helper()
		begin(t, r, eng, opts)
		if res := r.MustTurn("Hello?"); res.Text != cfg.Answer {
			t.Fatalf("the turn answered %q, want %q", res.Text, cfg.Answer)
		}
	}

	t.Run("the session of its shape adopts the warm process", func(t *testing.T) {
		r := cfg.NewRig(t)
		eng, pid := warm(t, r)
		start(t, r, eng, r.Opts)
		if got := cfg.PID(eng); got != pid {
			t.Fatalf("the session runs in process %d, not the warm %d", got, pid)
		}
	})
	t.Run("another key starts cold and stops the warm process", func(t *testing.T) {
		r := cfg.NewRig(t)
		eng, pid := warm(t, r)
		opts := r.Opts
		opts.Credentials = map[string]string{}
		for item := range r.Opts.Credentials {
			opts.Credentials[item] = r.cfg.Key + "-other"
		}
		begin(t, r, eng, opts)
		if got := cfg.PID(eng); got == pid || got == 0 {
			t.Fatalf("the session runs in process %d; the warm one was %d", got, pid)
		}
		WaitGone(t, pid)
		// The fake model accepts only the warm process's key: the
		// session's own key is refused, so the session did not get the
		// warm process's credential.
		if res, err := r.Turn("Hello?"); err == nil {
			t.Fatalf("a turn with the session's own key was answered %q by a model that accepts only the warm process's key", res.Text)
		}
	})
	t.Run("another cwd", func(t *testing.T) {
		r := cfg.NewRig(t)
		eng, pid := warm(t, r)
		opts := r.Opts
		opts.Cwd = t.TempDir()
		start(t, r, eng, opts)
		got := cfg.PID(eng)
		switch {
		case cfg.AnyCwd && got != pid:
			t.Fatalf("the session in another cwd runs in process %d, not the warm %d", got, pid)
		case !cfg.AnyCwd && got == pid:
			t.Fatalf("the session in another cwd runs in the warm process %d, started for the old cwd", pid)
		case !cfg.AnyCwd:
			WaitGone(t, pid)
		}
	})
	t.Run("a warm process that died is replaced", func(t *testing.T) {
		r := cfg.NewRig(t)
		eng, pid := warm(t, r)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		WaitGone(t, pid)
		start(t, r, eng, r.Opts)
		if got := cfg.PID(eng); got == pid || got == 0 {
			t.Fatalf("the session runs in process %d after the warm %d died", got, pid)
		}
	})
	t.Run("closed before its session, it leaves no process", func(t *testing.T) {
		r := cfg.NewRig(t)
		eng, pid := warm(t, r)
		if err := eng.Close(); err != nil {
			t.Fatal(err)
		}
		WaitGone(t, pid)
	})
}

// WaitGone waits until process pid no longer exists (reaped), failing the
// test after a minute.
func WaitGone(t testing.TB, pid int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still there: %v", pid, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
