package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Prewarmed engines (Config.Prewarm). After a session is created on an
// engine, the supervisor reserves the folder of the next session
// (sessiondir.Reserve), starts a spare runner and asks it to start that
// engine there for a session of the same shape (wire.Prewarm). The next
// create on the engine takes the folder and the runner; the engine adopts
// its warm process when the session's shape and credentials are those it
// was started for, and starts cold otherwise. One warm runner is kept per
// engine; it is never shared: taken once, it is the session's.
//
// Its fields are guarded by Manager.mu.
type prewarms struct {
	ready    map[string]*warmRunner // by engine
	starting map[string]bool
	bound    map[string]*child    // by reserved session id, taken by a create
	refused  map[string]bool      // engines whose runner cannot start them ahead
	failed   map[string]time.Time // when a prewarm last failed, by engine
	dirs     map[*child]string    // the reserved folder of each warm runner
}

// warmRunner is a runner holding an engine started ahead in the folder
// reserved for session id.
type warmRunner struct {
	child *child
	id    string
}

// anyCwd are the engines whose warm process serves any cwd: Codex takes
// the cwd at thread/start. Claude Code fixes it at its process's start, so
// a session in a worktree of its own (a workspace) cannot use one.
var anyCwd = map[string]bool{"codex": true}

// prewarmShape is what a warm engine is started for: the session's spec
// without what only the session has.
func prewarmShape(spec wire.Spec) wire.Spec {
	return wire.Spec{
		Engine: spec.Engine, Cwd: spec.Cwd, Model: spec.Model, ModelEndpoint: spec.ModelEndpoint,
		EngineConfig: spec.EngineConfig, Agent: spec.Agent,
	}
}

// prewarmWait is how long after a create the next warm runner waits for
// the session's first turn to end.
const prewarmWait = 10 * time.Second

// prewarmable says whether a session like spec could be given an engine
// started ahead.
func (m *Manager) prewarmable(spec wire.Spec) bool {
	switch {
	case !m.cfg.Prewarm || spec.NeedsPlugin() || spec.Engine == "script" || spec.Cwd == "":
		return false
	case spec.Workspace != nil && !anyCwd[spec.Engine]:
		return false
	}
	return true
}

// prewarmAfterFirstTurn starts a warm runner for the next session like
// spec, the spec of session id just created (with the cwd it asked for,
// before any workspace), once that session's first turn has ended, or
// prewarmWait has passed, or it is gone: a CLI starting ahead takes about
// as much CPU as the session's first turn, which it must not slow down.
func (m *Manager) prewarmAfterFirstTurn(id string, spec wire.Spec) {
	if !m.prewarmable(spec) {
		return
	}
	m.spawns.Add(1)
	go func() {
		defer m.spawns.Done()
		ctx, cancel := context.WithTimeout(m.stopping, prewarmWait)
		defer cancel()
		if s, err := m.Events(ctx, id, 0, true); err == nil {
			for {
				ev, err := s.Next(ctx)
				if err != nil || string(ev.Type) == string(event.TurnEnded) {
					break
				}
			}
			s.Close()
		}
		m.prewarmAfter(spec)
	}()
}

// prewarmAfter starts a warm runner for the next session like spec unless
// one is ready or starting.
func (m *Manager) prewarmAfter(spec wire.Spec) {
	if !m.prewarmable(spec) {
		return
	}
	shape := prewarmShape(spec)
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &m.prewarm
	if m.closed || p.refused[shape.Engine] || p.ready[shape.Engine] != nil || p.starting[shape.Engine] {
		return
	}
	if time.Since(p.failed[shape.Engine]) < spareRetry {
		return
	}
	p.starting[shape.Engine] = true
	m.spawns.Add(1)
	go m.startWarm(shape)
}

// startWarm reserves a folder, starts a runner and has it start the engine
// of shape there.
func (m *Manager) startWarm(shape wire.Spec) {
	defer m.spawns.Done()
	w, err := m.warmUp(shape)
	m.mu.Lock()
	p := &m.prewarm
	delete(p.starting, shape.Engine)
	late := w != nil && m.closed
	switch {
	case err != nil:
		p.failed[shape.Engine] = time.Now()
		var we *wire.Error
		if errors.As(err, &we) && we.Code == wire.CodeBadRequest {
			p.refused[shape.Engine] = true
		}
	case !late:
		p.ready[shape.Engine] = w
		p.dirs[w.child] = m.dir(w.id)
	}
	m.mu.Unlock()
	switch {
	case err != nil:
		m.log.Info("no engine started ahead", zap.String("engine", shape.Engine), zap.Error(err))
	case late:
		m.dropWarm(w.child, w.id)
	default:
		m.log.Debug("runner ready with an engine started ahead", zap.String("engine", shape.Engine), zap.String("session", w.id))
	}
}

func (m *Manager) warmUp(shape wire.Spec) (*warmRunner, error) {
	id, dir, err := sessiondir.Reserve(m.sessions, m.reserver())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(m.stopping, m.cfg.StartTimeout)
	defer cancel()
	c, err := m.startProcess(ctx, m.cfg.RunnerPath, "", "")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	c.setEngine(shape.Engine)
	shape.ID = id
	r, err := call(ctx, c, &wire.Prewarm{Spec: shape, Dir: dir, Credentials: m.credentials(shape)})
	if err == nil && r.Error != nil {
		err = r.Error
	}
	if err != nil {
		m.dropWarm(c, id)
		return nil, err
	}
	return &warmRunner{child: c, id: id}, nil
}

// dropWarm stops a warm runner no session took and removes its folder.
func (m *Manager) dropWarm(c *child, id string) {
	c.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
	m.removeIfReserved(m.dir(id))
}

// reserver names this supervisor in the folders it reserves: the host and
// the state folder, so that of nodes sharing a storage (docs/fleet.md) each
// removes only its own.
func (m *Manager) reserver() string {
	host, _ := os.Hostname()
	return host + "\n" + m.cfg.StateDir
}

// removeIfReserved removes dir if this supervisor reserved it and no
// session took it.
func (m *Manager) removeIfReserved(dir string) {
	if owner, ok := sessiondir.IsReserved(dir); ok && owner == m.reserver() {
		os.RemoveAll(dir)
	}
}

// takeWarm hands a create on spec's engine the warm runner of that engine,
// if one is ready and running: the create makes the session in the warm
// runner's reserved folder, and its start takes the runner (takeBound).
func (m *Manager) takeWarm(spec wire.Spec) *warmRunner {
	if !m.cfg.Prewarm || spec.NeedsPlugin() {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p := &m.prewarm
	w := p.ready[spec.Engine]
	if w == nil || m.closed {
		return nil
	}
	delete(p.ready, spec.Engine)
	delete(p.dirs, w.child)
	if !w.child.alive() {
		m.spawns.Add(1)
		go func() {
			defer m.spawns.Done()
			m.dropWarm(w.child, w.id)
		}()
		return nil
	}
	p.bound[w.id] = w.child
	return w
}

// createInWarm makes the session of spec in the folder reserved for warm
// runner w. When that fails (the folder is gone), it stops w and makes the
// session in a new folder instead.
func (m *Manager) createInWarm(w *warmRunner, spec wire.Spec) (wire.Spec, error) {
	created, err := sessiondir.CreateReserved(m.sessions, w.id, spec)
	if err == nil {
		return created, nil
	}
	m.log.Warn("the folder reserved for a session is gone; starting it cold", zap.String("session", w.id), zap.Error(err))
	m.releaseBound(w.id)
	m.removeIfReserved(m.dir(w.id))
	return createFolder(m.sessions, spec)
}

// takeBound returns the warm runner a create bound to session id.
func (m *Manager) takeBound(id string) *child {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := m.prewarm.bound[id]
	delete(m.prewarm.bound, id)
	return c
}

// releaseBound stops a warm runner bound to session id that its start
// did not take (the start failed before it got there).
func (m *Manager) releaseBound(id string) {
	if c := m.takeBound(id); c != nil {
		c.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
	}
}

// newPrewarms returns the empty state of prewarmed engines.
func newPrewarms() prewarms {
	return prewarms{
		ready: map[string]*warmRunner{}, starting: map[string]bool{}, bound: map[string]*child{},
		refused: map[string]bool{}, failed: map[string]time.Time{}, dirs: map[*child]string{},
	}
}

// onWarmExitLocked forgets a warm runner that exited before a session took it,
// and removes its folder. It runs with m.mu held.
func (m *Manager) onWarmExitLocked(c *child) {
	p := &m.prewarm
	dir, ok := p.dirs[c]
	if !ok {
		return
	}
	delete(p.dirs, c)
	for engine, w := range p.ready {
		if w.child == c {
			delete(p.ready, engine)
		}
	}
	c.log.Warn("runner with an engine started ahead exited", zap.Error(c.death))
	m.removeIfReserved(dir)
}

// stopWarm stops every warm runner, during Shutdown.
func (m *Manager) stopWarm() {
	m.mu.Lock()
	var ws []*warmRunner
	for _, w := range m.prewarm.ready {
		ws = append(ws, w)
	}
	m.prewarm.ready = map[string]*warmRunner{}
	m.prewarm.dirs = map[*child]string{}
	m.mu.Unlock()
	for _, w := range ws {
		m.dropWarm(w.child, w.id)
	}
}

// removeReserved removes the folders this supervisor reserved, in a
// previous run, for sessions never created.
func (m *Manager) removeReserved() {
	des, err := os.ReadDir(m.sessions)
	if err != nil {
		return
	}
	for _, de := range des {
		if de.IsDir() {
			m.removeIfReserved(filepath.Join(m.sessions, de.Name()))
		}
	}
}
