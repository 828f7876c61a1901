package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// Create makes a session folder for spec, starts its runner and returns the
// session once the runner reported it live. A session whose runner fails to
// start is removed again.
func (m *Manager) Create(ctx context.Context, spec wire.Spec) (api.Session, error) {
	if err := validateSpec(spec); err != nil {
		return api.Session{}, err
	}
	// The supervisor's defaults for the engine go into the spec, under
	// the session's own settings: the session keeps what it was created
	// with.
	spec.EngineConfig = spec.EngineConfig.Merged(m.cfg.EngineDefaults[spec.Engine])
	if spec.Parent != "" {
		if _, err := readSpec(m.dir(spec.Parent), spec.Parent); err != nil {
			return api.Session{}, wire.Errorf(wire.CodeBadRequest, "parent %q: no such session", spec.Parent)
		}
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return api.Session{}, shuttingDown()
	}
	asked := spec // the cwd asked for, before a workspace: the next session's shape
	spec, undoWorkspace, err := m.makeWorkspace(ctx, spec)
	if err != nil {
		return api.Session{}, err
	}
	if w := m.takeWarm(spec); w != nil {
		spec, err = m.createInWarm(w, spec)
	} else {
		spec, err = createFolder(m.sessions, spec)
	}
	if err != nil {
		undoWorkspace()
		return api.Session{}, err
	}
	m.publishLife(spec.ID, api.Lifecycle{Type: api.LifeCreated, Spec: &spec})
	e, err := m.acquire(ctx, spec.ID)
	m.releaseBound(spec.ID)
	if err == nil {
		asked.Workspace = spec.Workspace
		m.prewarmAfterFirstTurn(spec.ID, asked)
	}
	if err != nil {
		if ctx.Err() == nil {
			// The start failed; the runner is gone, so is the session.
			m.closeHub(spec.ID, notFound(spec.ID))
			os.RemoveAll(m.dir(spec.ID))
			undoWorkspace()
			m.publishLife(spec.ID, api.Lifecycle{Type: api.LifeDeleted})
		}
		return api.Session{}, err
	}
	defer m.release(e, true)
	m.log.Info("session created", zap.String("session", spec.ID), zap.String("engine", spec.Engine))
	return m.Get(ctx, spec.ID)
}

// Get describes session id. Its status comes from the runner when one is
// live, else from the presence.json the runner left.
func (m *Manager) Get(ctx context.Context, id string) (api.Session, error) {
	if !validID(id) {
		return api.Session{}, notFound(id)
	}
	dir := m.dir(id)
	spec, err := readSpec(dir, id)
	if err != nil {
		return api.Session{}, err
	}
	s := api.Session{ID: id, Spec: spec, UpdatedAt: updatedAt(dir)}
	m.mu.Lock()
	if crash := m.crashes[id]; crash != nil {
		s.LastCrash = api.NewError(crash)
	}
	m.mu.Unlock()
	if e := m.holdLive(id); e != nil {
		s.Live = true
		st, err := m.status(ctx, e.child)
		m.release(e, false)
		if err == nil {
			s.Status = st
			return s, nil
		}
		m.log.Debug("live status unavailable; using presence", zap.String("session", id), zap.Error(err))
	}
	st, err := readPresence(dir)
	if err != nil {
		m.log.Warn("unreadable presence", zap.String("session", id), zap.Error(err))
	}
	s.Status = st
	return s, nil
}

// holdLive returns the entry of id when its runner is live, without
// starting one.
func (m *Manager) holdLive(id string) *entry {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[id]
	if e == nil || e.retiring || m.closed {
		return nil
	}
	select {
	case <-e.ready:
	default:
		return nil
	}
	if e.err != nil || !e.child.alive() {
		return nil
	}
	e.holds++
	return e
}

func updatedAt(dir string) time.Time {
	for _, name := range []string{eventsFile, metaFile} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return fi.ModTime().UTC()
		}
	}
	return time.Time{}
}

// List describes every session, most recently updated first.
func (m *Manager) List(ctx context.Context) ([]api.Session, error) {
	des, err := os.ReadDir(m.sessions)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var ids []string
	for _, de := range des {
		if de.IsDir() && validID(de.Name()) {
			ids = append(ids, de.Name())
		}
	}
	out := make([]api.Session, 0, len(ids))
	for _, got := range m.GetMany(ctx, ids) {
		if errors.Is(got.Err, wire.ErrNotFound) {
			continue // not a session, or deleted meanwhile
		}
		if got.Err != nil {
			return nil, got.Err
		}
		out = append(out, got.Session)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Got is one session of GetMany: the session, or why Get failed.
type Got struct {
	Session api.Session
	Err     error
}

// defaultGetWorkers bounds the sessions GetMany describes at once.
const defaultGetWorkers = 16

// GetMany describes the sessions ids, in their order, several at once: a
// live session's status is a round trip to its runner, and one runner slow
// to answer (a busy machine, a runner stopped by a debugger) must not make
// a list of hundreds wait for each in turn.
func (m *Manager) GetMany(ctx context.Context, ids []string) []Got {
	out := make([]Got, len(ids))
	var g errgroup.Group
	g.SetLimit(m.getWorkers)
	for i, id := range ids {
		g.Go(func() error {
			out[i].Session, out[i].Err = m.Get(ctx, id)
			return nil
		})
	}
	g.Wait()
	return out
}

// Live reports whether session id has a live runner.
func (m *Manager) Live(id string) bool {
	e := m.holdLive(id)
	if e == nil {
		return false
	}
	m.release(e, false)
	return true
}

// LiveCount counts the sessions with a live runner.
func (m *Manager) LiveCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*entry]bool{}
	for _, e := range m.entries {
		select {
		case <-e.ready:
			if e.err == nil && !e.retiring && e.child.alive() {
				seen[e] = true
			}
		default:
		}
	}
	return len(seen)
}

// Delete stops the session's runner and removes its folder. Streams
// following it end with not_found.
func (m *Manager) Delete(ctx context.Context, id string) error {
	if !validID(id) {
		return notFound(id)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return shuttingDown()
	}
	if m.deleting[id] {
		m.mu.Unlock()
		return wire.Errorf(wire.CodeConflict, "session %s is already being deleted", id)
	}
	if _, err := os.Stat(filepath.Join(m.dir(id), metaFile)); err != nil {
		m.mu.Unlock()
		return notFound(id)
	}
	m.deleting[id] = true
	e := m.entries[id]
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.deleting, id)
		m.mu.Unlock()
	}()

	if e != nil {
		select {
		case <-e.ready:
		case <-ctx.Done():
			return ctxError(ctx, wire.TShutdown)
		}
		if c := e.child; c != nil {
			m.mu.Lock()
			aliasOnly := len(e.ids) > 1 && c.currentSession() != id
			if aliasOnly {
				delete(m.entries, id)
				for i, x := range e.ids {
					if x == id {
						e.ids = append(e.ids[:i], e.ids[i+1:]...)
						break
					}
				}
			} else {
				e.retiring = true
			}
			m.mu.Unlock()
			if !aliasOnly {
				c.stop(m.cfg.ShutdownGrace, m.cfg.KillGrace)
			}
		}
	}
	m.closeHub(id, wire.Errorf(wire.CodeNotFound, "session %s was deleted", id))
	m.mu.Lock()
	delete(m.crashes, id)
	m.mu.Unlock()
	spec, specErr := readSpec(m.dir(id), id)
	if err := os.RemoveAll(m.dir(id)); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	if specErr == nil {
		m.dropWorkspace(ctx, id, spec)
	}
	m.publishLife(id, api.Lifecycle{Type: api.LifeDeleted})
	m.log.Info("session deleted", zap.String("session", id))
	return nil
}

// Events returns a stream of session id's events from seq from on (from <= 1
// means from the first). With follow, the stream goes on live after the
// log's end; without, it ends there with io.EOF.
func (m *Manager) Events(ctx context.Context, id string, from int64, follow bool) (*Stream, error) {
	if !validID(id) {
		return nil, notFound(id)
	}
	dir := m.dir(id)
	if _, err := os.Stat(filepath.Join(dir, metaFile)); err != nil {
		return nil, notFound(id)
	}
	var h *hub
	if follow {
		h = m.hub(id)
		if err := h.err(); err != nil {
			return nil, err
		}
	}
	return newStream(filepath.Join(dir, eventsFile), h, from, m.cfg.SubscriberBuffer, m.cfg.MaxLine, m.log.With(zap.String("session", id))), nil
}
