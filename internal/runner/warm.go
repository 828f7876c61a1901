package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// Warm opens and closes a scratch session on the script engine in a
// temporary folder, answering status and serving a control socket on the
// way. A spare runner does this while it waits for a session: a process
// pays once for faulting in the code a session start runs, building the
// JSON encoders of the wire types, compiling the gate's patterns and
// parsing the demo scenario, and on the project's 2-core machine that is
// about half the CPU time of opening a session. It needs opts.Engines to
// hold "script".
func Warm(ctx context.Context, opts Options) (err error) {
	if opts.Engines["script"] == nil {
		return errors.New("warm up: no script engine")
	}
	removeStaleWarmUps(os.TempDir(), time.Now())
	tmp, err := os.MkdirTemp("", warmPrefix)
	if err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	defer os.RemoveAll(tmp)
	opts.Dir = filepath.Join(tmp, "session")
	opts.Spec = wire.Spec{Engine: "script", Cwd: tmp}
	opts.Logger = zap.NewNop()
	opts.Mirror, opts.Rotate = nil, nil
	r, err := New(opts)
	if err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	defer func() {
		if cerr := r.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("warm up: %w", cerr)
		}
	}()
	if err := r.Start(ctx); err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	ln, err := ListenControl(opts.Dir)
	if err != nil {
		return fmt.Errorf("warm up: %w", err)
	}
	ln.Close()
	if reply := r.Do(ctx, command.GetStatus{}); !reply.OK {
		return fmt.Errorf("warm up: status: %w", reply.Error)
	}
	return nil
}

// warmPrefix begins the name of a warm-up's scratch folder.
const warmPrefix = "corral-warm-"

// staleWarmUp is the age past which a scratch folder was left behind: a
// warm-up takes milliseconds, and a runner cleans up after its own unless
// it is killed mid-way (SIGKILL, which is how a runner dies with a
// supervisor killed outright).
const staleWarmUp = time.Minute

// removeStaleWarmUps removes the scratch folders in dir that runners killed
// while warming up left behind.
func removeStaleWarmUps(dir string, now time.Time) {
	matches, _ := filepath.Glob(filepath.Join(dir, warmPrefix+"*"))
	for _, path := range matches {
		if info, err := os.Lstat(path); err == nil && info.IsDir() && now.Sub(info.ModTime()) > staleWarmUp {
			os.RemoveAll(path)
		}
	}
}
