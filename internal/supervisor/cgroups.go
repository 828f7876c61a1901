package supervisor

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/cgroup"
)

// Each runner, and all it starts, lives in a cgroup (v2) of its own where
// the system allows it (Config.Cgroups): a leaf of the supervisor's subtree
// (internal/cgroup), which the runner is started into atomically. When the
// runner ends, however it ends, the leaf is swept: whatever is left in it
// is killed (a job that left the runner's process group with setsid and
// ignores SIGHUP included), waited for, and the leaf removed. A supervisor
// re-attaching to a runner keeps its leaf; leaves of runners that are gone
// are swept when a supervisor starts. A runner that outlives its
// supervisor and then stops on its own kills the rest of its leaf on its
// way out (runner --own-cgroup); its empty leaf goes with the next
// supervisor's start.

// sweepTimeout bounds the wait for a swept leaf to empty: SIGKILL takes
// effect at once, except on a process in an uninterruptible sleep.
const sweepTimeout = 10 * time.Second

// openCgroups opens the subtree of this supervisor's runners, as
// cfg.Cgroups asks: nil when cgroups are off or, with auto, not usable
// here (said once, at info level). Limits that cannot be applied fail a
// required start and are a warning with auto.
func openCgroups(cfg Config, log *zap.Logger) (*cgroup.Tree, error) {
	limits := len(cfg.RunnerLimits.Controllers()) > 0
	if cfg.Cgroups == "" || cfg.Cgroups == cgroup.Off {
		if limits {
			return nil, errors.New("supervisor: runner limits need cgroups, which are off")
		}
		return nil, nil
	}
	t, err := cgroup.Open(cgroup.SubtreeName(cfg.StateDir))
	if err != nil {
		if cfg.Cgroups == cgroup.Required {
			return nil, fmt.Errorf("supervisor: cgroups required: %w", err)
		}
		log.Info("runners are not put in cgroups: a runner's crash sweep is its process group", zap.Error(err))
		if limits {
			log.Warn("runner limits are not applied: they need cgroups", zap.Error(err))
		}
		return nil, nil
	}
	if err := t.SetLimits(cfg.RunnerLimits); err != nil {
		if cfg.Cgroups == cgroup.Required {
			t.Close()
			return nil, fmt.Errorf("supervisor: runner limits: %w", err)
		}
		log.Warn("runner limits are not applied", zap.Error(err))
	}
	log.Info("each runner runs in a cgroup of its own", zap.String("cgroup", t.Dir()))
	return t, nil
}

// newLeaf makes the cgroup of a runner about to start for session (empty:
// a spare), or returns nil without cgroups. With auto, a leaf that cannot
// be made is logged and the runner starts without one.
func (m *Manager) newLeaf(session string) (*cgroup.Leaf, error) {
	if m.cgroups == nil {
		return nil, nil
	}
	prefix := session
	if prefix == "" {
		prefix = "spare"
	}
	l, err := m.cgroups.NewLeaf(prefix)
	if err != nil {
		if m.cfg.Cgroups == cgroup.Required {
			return nil, err
		}
		m.log.Warn("runner started without a cgroup of its own", zap.String("session", session), zap.Error(err))
		return nil, nil
	}
	return l, nil
}

// sweepLeaf kills what is left in a gone runner's leaf and removes it.
func sweepLeaf(log *zap.Logger, l *cgroup.Leaf) {
	if l == nil {
		return
	}
	n, err := l.Sweep(sweepTimeout)
	switch {
	case err != nil:
		log.Warn("runner's cgroup not swept", zap.String("cgroup", l.Dir()), zap.Error(err))
	case n > 0:
		log.Info("killed what the runner left in its cgroup", zap.Int("processes", n), zap.String("cgroup", l.Dir()))
	}
}

// sweepStaleLeaves sweeps the leaves of runners that are gone, kept being
// the leaves of the runners this supervisor re-attached to. It runs at
// start, before any runner of this supervisor's own.
func (m *Manager) sweepStaleLeaves(keep map[string]bool) {
	if m.cgroups == nil {
		return
	}
	leaves, err := m.cgroups.Leaves()
	if err != nil {
		m.log.Warn("sweep of stale runner cgroups skipped", zap.Error(err))
		return
	}
	for _, l := range leaves {
		if !keep[l.Dir()] {
			sweepLeaf(m.log, l)
		}
	}
}

// adoptedLeaves returns the leaves of the runners re-attached to.
func (m *Manager) adoptedLeaves() map[string]bool {
	keep := map[string]bool{}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.entries {
		if e.child != nil && e.child.leaf != nil {
			keep[e.child.leaf.Dir()] = true
		}
	}
	return keep
}

// closeCgroups removes the subtree once no leaf is left in it: a runner
// left running for the next supervisor keeps its leaf, and the subtree.
func (m *Manager) closeCgroups() {
	if m.cgroups == nil {
		return
	}
	if err := m.cgroups.Close(); err != nil {
		m.log.Warn("runners' cgroup not removed", zap.String("cgroup", m.cgroups.Dir()), zap.Error(err))
	}
}

// leafOf returns the cgroup of runner pid, started by a previous
// supervisor, when it is a runner's leaf; nil without cgroups.
func (m *Manager) leafOf(pid int) *cgroup.Leaf {
	if m.cgroups == nil {
		return nil
	}
	l, err := m.cgroups.LeafOf(pid)
	if err != nil {
		m.log.Debug("runner's cgroup not found", zap.Int("pid", pid), zap.Error(err))
	}
	return l
}
