package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// Manager keeps the sessions of one state folder and their runners. Its
// methods are safe for concurrent use.
type Manager struct {
	cfg      Config
	log      *zap.Logger
	sessions string // <state>/sessions

	// stopping ends runner starts still under way when Shutdown begins.
	stopping   context.Context
	stopStarts context.CancelFunc

	mu       sync.Mutex
	entries  map[string]*entry // by session id; a rotated session's ids share one
	hubs     map[string]*hub
	crashes  map[string]*wire.Error // the last crash of each session's runner
	deleting map[string]bool
	closed   bool
	spawns   sync.WaitGroup
	spare    spare
	prewarm  prewarms
	termBufs termBuffers // terminal output from every runner
	bus      *bus        // every session's events and lifecycle, for Feed
	checks   *engineChecks
	// cgroups is the subtree of the runners' cgroups; nil without
	// (cgroups.go).
	cgroups *cgroup.Tree
	// getWorkers is how many sessions GetMany describes at once.
	getWorkers int
}

// entry is one runner, from its spawn to its exit.
type entry struct {
	ids   []string
	ready chan struct{} // closed once child or err is set
	child *child
	err   error

	holds    int  // calls in flight
	retiring bool // being stopped: callers wait for the exit, then respawn
	lastUsed time.Time
	claims   []Claim // what the fleet granted the runner (Config.Claims)
}

// New returns a Manager for cfg.StateDir, creating its sessions folder and
// killing runners a previous supervisor left behind.
func New(cfg Config) (*Manager, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	for _, p := range []*string{&cfg.RunnerPath, &cfg.PluginRunnerPath} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("runner path: %w", err)
		}
		*p = abs
	}
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	cfg.StateDir = state
	if cfg.StorageDir, err = filepath.Abs(cfg.StorageDir); err != nil {
		return nil, fmt.Errorf("storage directory: %w", err)
	}
	m := &Manager{
		cfg:      cfg,
		log:      cfg.Logger,
		sessions: filepath.Join(cfg.StorageDir, "sessions"),
		entries:  map[string]*entry{},
		hubs:     map[string]*hub{},
		crashes:  map[string]*wire.Error{},
		deleting: map[string]bool{},
		bus:      newBus(cfg.FeedItems, cfg.FeedBytes),
		checks:   newEngineChecks(cfg),
		prewarm:  newPrewarms(),

		getWorkers: defaultGetWorkers,
	}
	if err := os.MkdirAll(m.sessions, 0o700); err != nil {
		return nil, fmt.Errorf("sessions folder: %w", err)
	}
	if m.cgroups, err = openCgroups(cfg, m.log); err != nil {
		return nil, err
	}
	m.stopping, m.stopStarts = context.WithCancel(context.Background())
	m.sweepStaleRunners()
	m.sweepStaleLeaves(m.adoptedLeaves())
	m.removeReserved()
	m.refillSpare()
	return m, nil
}

func (m *Manager) dir(id string) string { return filepath.Join(m.sessions, id) }

// SessionDir is the folder of session id.
func (m *Manager) SessionDir(id string) string { return m.dir(id) }

func shuttingDown() error {
	return wire.Errorf(wire.CodeUnavailable, "the supervisor is shutting down")
}

// acquire returns the live runner entry of session id, starting the runner
// when there is none; concurrent callers share one start. The caller must
// release the entry.
func (m *Manager) acquire(ctx context.Context, id string) (*entry, error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	for {
		m.mu.Lock()
		if m.closed {
			m.mu.Unlock()
			return nil, shuttingDown()
		}
		if m.deleting[id] {
			m.mu.Unlock()
			return nil, notFound(id)
		}
		e := m.entries[id]
		if e == nil {
			if _, err := os.Stat(filepath.Join(m.dir(id), metaFile)); err != nil {
				m.mu.Unlock()
				return nil, notFound(id)
			}
			if m.liveLocked() >= m.cfg.MaxLive {
				m.mu.Unlock()
				if err := m.makeRoom(); err != nil {
					return nil, err
				}
				continue
			}
			e = &entry{ids: []string{id}, ready: make(chan struct{})}
			m.entries[id] = e
			m.spawns.Add(1)
			go m.spawn(e, id)
		}
		m.mu.Unlock()

		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, ctxError(ctx, wire.TLiveEnsure)
		}
		if e.err != nil {
			return nil, e.err
		}
		c := e.child
		m.mu.Lock()
		if m.entries[id] == e && !e.retiring && !m.closed && c.alive() {
			e.holds++
			m.mu.Unlock()
			return e, nil
		}
		if m.entries[id] == e && !c.alive() {
			m.dropLocked(e)
		}
		m.mu.Unlock()
		// Stopping or dead: wait for the exit, then start afresh.
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctxError(ctx, wire.TLiveEnsure)
		}
	}
}

// release ends a call; touch marks the session as used for the idle clock.
func (m *Manager) release(e *entry, touch bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e.holds--
	if touch {
		e.lastUsed = m.cfg.Now()
	}
	// A call that took the spare has done its work: the next spare no
	// longer competes with it for the CPU.
	m.refillSpareLocked()
}

func (m *Manager) dropLocked(e *entry) {
	for _, id := range e.ids {
		if m.entries[id] == e {
			delete(m.entries, id)
		}
	}
}

func (m *Manager) spawn(e *entry, id string) {
	defer m.spawns.Done()
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(m.stopping, m.cfg.StartTimeout)
	claim, err := m.claim(ctx, id)
	cancel()
	var c *child
	spare := false
	if err == nil {
		c, spare, err = m.startRunner(id)
		if err != nil && claim != nil {
			claim.Release()
		}
	}
	m.cfg.Observer.SessionStart(time.Since(t0), spare, err)
	m.mu.Lock()
	late := err == nil && m.closed
	if late {
		err = shuttingDown()
	}
	if err != nil {
		m.dropLocked(e)
		e.err = err
	} else {
		e.child = c
		e.lastUsed = m.cfg.Now()
		c.madeLive.Store(true)
		if claim != nil {
			e.claims = append(e.claims, claim)
		}
	}
	m.mu.Unlock()
	// The lifecycle item goes out before whoever waits for the start goes
	// on, so nothing a command then causes reaches a feed ahead of it.
	if err != nil {
		m.publishLife(id, api.Lifecycle{Type: api.LifeFailed, Error: api.NewError(err)})
	} else if !late {
		m.publishLife(id, api.Lifecycle{Type: api.LifeLive})
	}
	close(e.ready)
	if late {
		c.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
	}
}

// startRunner starts the runner of session id, or takes the spare, and
// makes the session live. spare says the session opened in the spare.
func (m *Manager) startRunner(id string) (c *child, spare bool, err error) {
	dir := m.dir(id)
	spec, err := readSpec(dir, id)
	if err != nil {
		return nil, false, err
	}
	ctx, cancel := context.WithTimeout(m.stopping, m.cfg.StartTimeout)
	defer cancel()
	// A runner whose engine was started ahead in this reserved folder
	// (prewarm.go), else the spare.
	if c := m.takeBound(id); c != nil {
		c.takeSession(id)
		err := m.open(ctx, c, spec, dir)
		if err == nil {
			return c, true, nil
		}
		if ctx.Err() != nil || !errors.Is(err, wire.ErrRunnerCrashed) {
			return nil, true, err
		}
	}
	if !spec.NeedsPlugin() {
		if c := m.takeSpare(ctx, id); c != nil {
			err := m.open(ctx, c, spec, dir)
			if err == nil {
				return c, true, nil
			}
			if ctx.Err() != nil || !errors.Is(err, wire.ErrRunnerCrashed) {
				return nil, true, err
			}
			// The spare died as it was handed the session: start another.
		}
	}
	runner := m.cfg.RunnerPath
	if spec.NeedsPlugin() {
		runner = m.cfg.PluginRunnerPath
	}
	c, err = m.startProcess(ctx, runner, dir, id)
	if err != nil {
		return nil, false, fmt.Errorf("start runner for session %s: %w", id, err)
	}
	if err := m.open(ctx, c, spec, dir); err != nil {
		return nil, false, err
	}
	return c, false, nil
}

// open makes the session in dir live in runner c, or kills c.
func (m *Manager) open(ctx context.Context, c *child, spec wire.Spec, dir string) error {
	c.setEngine(spec.Engine)
	if err := m.ensureLive(ctx, c, spec, dir); err != nil {
		c.abort(m.cfg.KillGrace)
		return fmt.Errorf("start session %s: %w", spec.ID, err)
	}
	c.log.Debug("runner live", zap.String("session", spec.ID))
	return nil
}

// startProcess starts a runner and completes its handshake. Without dir
// it is a spare, taking the session folder its live.ensure names.
func (m *Manager) startProcess(ctx context.Context, runner, dir, session string) (*child, error) {
	log := m.log
	if session != "" {
		log = log.With(zap.String("session", session))
	}
	leaf, err := m.newLeaf(session)
	if err != nil {
		return nil, err
	}
	sp := spawnSpec{
		runner:    runner,
		dir:       dir,
		workDir:   m.sessions,
		session:   session,
		env:       m.cfg.Env,
		maxLine:   m.cfg.MaxLine,
		buffers:   &m.termBufs,
		log:       log,
		runnerLog: m.log.Named("runner"),
		grace:     m.cfg.RunnerGrace,
		leaf:      leaf,
		now:       m.cfg.Now,
		hooks:     m.childHooks(),
	}
	c, err := startChild(sp)
	if err != nil && leaf != nil && m.cfg.Cgroups != cgroup.Required {
		// A kernel without clone3's CLONE_INTO_CGROUP (before 5.7).
		m.log.Warn("runner started without a cgroup of its own", zap.Error(err))
		sp.leaf = nil
		c, err = startChild(sp)
	}
	if err != nil {
		return nil, err
	}
	if err := c.handshake(ctx, 0); err != nil {
		c.abort(m.cfg.KillGrace)
		return nil, err
	}
	return c, nil
}

func (m *Manager) childHooks() childHooks {
	return childHooks{hub: m.hub, rotate: m.onRotate, exit: m.onExit, storage: m.onStorage, observer: m.cfg.Observer}
}

// onStorage tells the feed that c's session's event log failed, or takes
// writes again: the log itself cannot say so.
func (m *Manager) onStorage(c *child, failed bool) {
	id, _ := c.identity()
	if failed {
		m.publishLife(id, api.Lifecycle{Type: api.LifeStorageFailed, Error: api.NewError(storageUnavailable(id))})
		return
	}
	m.publishLife(id, api.Lifecycle{Type: api.LifeStorageRestored})
}

func (m *Manager) ensureLive(ctx context.Context, c *child, spec wire.Spec, dir string) error {
	r, err := call(ctx, c, &wire.LiveEnsure{Spec: spec, Dir: dir, Credentials: m.credentials(spec)})
	if err != nil {
		return err
	}
	if r.Error != nil {
		return r.Error
	}
	return nil
}

// credentials reads the secrets spec's engine uses, and only those. A store
// that cannot be read is logged (never a secret: the error names the item
// and the store) and the runner starts without them: a session that needs
// none (an endpoint without a key, a CLI's own login) still starts, and one
// that does fails with signInExpired, saying which item is missing.
func (m *Manager) credentials(spec wire.Spec) map[string]string {
	if m.cfg.Credentials == nil {
		return nil
	}
	secrets, err := m.cfg.Credentials.Pick(catalog.CredentialsFor(spec.Engine))
	if err != nil {
		m.log.Warn("credentials not read", zap.String("session", spec.ID), zap.String("engine", spec.Engine), zap.Error(err))
	}
	if len(secrets) == 0 {
		return nil
	}
	return secrets
}

func (m *Manager) onExit(c *child) {
	crash := c.death
	if crash.Code != wire.CodeRunnerCrashed {
		crash = nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onWarmExitLocked(c)
	if m.spare.child == c {
		m.spare.child = nil
		c.log.Warn("spare runner exited", zap.Error(c.death))
	} else if c.madeLive.Load() {
		m.cfg.Observer.RunnerExit(crash != nil)
	}
	for id, e := range m.entries {
		if e.child == c {
			delete(m.entries, id)
			if crash != nil {
				m.crashes[id] = crash
				m.publishLife(id, api.Lifecycle{Type: api.LifeFailed, Error: api.NewError(crash)})
			}
			releaseClaims(e)
		}
	}
}

func (m *Manager) onRotate(c *child, from, to string) {
	if !validID(to) {
		c.log.Warn("ignoring rotate to an invalid session id", zap.String("to", to))
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var e *entry
	if x := m.entries[from]; x != nil && x.child == c {
		e = x
	}
	for _, x := range m.entries {
		if e == nil && x.child == c {
			e = x
		}
	}
	if e == nil {
		return // the runner is on its way out
	}
	if other := m.entries[to]; other != nil && other != e {
		c.log.Warn("rotate to a session another runner holds; ignored", zap.String("to", to))
		return
	}
	m.entries[to] = e
	e.ids = append(e.ids, to)
	c.log.Info("session rotated", zap.String("from", from), zap.String("to", to))
	if m.cfg.Claims != nil && !m.closed {
		m.spawns.Add(1)
		go m.claimRotated(e, to)
	}
	if spec, err := readSpec(m.dir(to), to); err == nil {
		m.publishLife(to, api.Lifecycle{Type: api.LifeCreated, Spec: &spec})
	}
	m.publishLife(to, api.Lifecycle{Type: api.LifeLive})
}

// hub returns the event hub of a session, making it on first use.
func (m *Manager) hub(id string) *hub {
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.hubs[id]
	if h == nil {
		h = &hub{id: id, bus: m.bus}
		if m.closed {
			h.closed = shuttingDown()
		}
		m.hubs[id] = h
	}
	return h
}

func (m *Manager) closeHub(id string, err error) {
	m.mu.Lock()
	h := m.hubs[id]
	delete(m.hubs, id)
	m.mu.Unlock()
	if h != nil {
		h.close(err)
	}
}

// withCallTimeout bounds a call whose context has no deadline.
func (m *Manager) withCallTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, m.cfg.CallTimeout)
}

// Closing reports whether Shutdown has begun.
func (m *Manager) Closing() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.closed
}

// Shutdown stops every runner: shutdown first, SIGTERM to its group after
// the grace period, SIGKILL after the kill grace. With a RunnerGrace it
// stops only the spare and lets go of every session's runner instead,
// which waits for the next supervisor to re-attach (adopt_linux.go). Streams end
// with unavailable and later calls fail with it.
func (m *Manager) Shutdown(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	hubs := m.hubs
	m.hubs = map[string]*hub{}
	m.mu.Unlock()
	m.stopStarts()
	m.bus.close(shuttingDown())
	for _, h := range hubs {
		h.close(shuttingDown())
	}

	spawned := make(chan struct{})
	go func() {
		m.spawns.Wait()
		close(spawned)
	}()
	select {
	case <-spawned:
	case <-ctx.Done():
		return fmt.Errorf("shutdown: waiting for runners being started: %w", ctx.Err())
	}

	m.stopSpare()
	m.stopWarm()
	m.mu.Lock()
	var children []*child
	seen := map[*entry]bool{}
	for _, e := range m.entries {
		if seen[e] || e.child == nil {
			continue
		}
		seen[e] = true
		e.retiring = true
		children = append(children, e.child)
	}
	m.mu.Unlock()

	if m.cfg.RunnerGrace > 0 {
		for _, c := range children {
			c.detach()
		}
		m.log.Info("runners left running for the next supervisor", zap.Int("runners", len(children)), zap.Duration("grace", m.cfg.RunnerGrace))
		m.closeCgroups()
		return nil
	}
	var wg sync.WaitGroup
	for _, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
		}()
	}
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
		m.log.Info("every runner stopped", zap.Int("runners", len(children)))
		m.closeCgroups()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("shutdown: stopping runners: %w", ctx.Err())
	}
}
