// Package sessions is a supervisor's side of a fleet (docs/fleet.md): it
// joins the fleet over NATS, holds a claim (the fleet's lease) on every
// session whose runner it starts, answers other nodes' requests for its own
// sessions, and serves the whole API for every session of the fleet,
// routing each request to the node the session belongs to. It implements
// the HTTP layer's Sessions, as the manager does for one machine.
package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/metrics"
	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/httpapi"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// Config says how a supervisor joins a fleet.
type Config struct {
	// NATS are the URLs of the fleet's NATS servers.
	NATS []string
	// Creds is a NATS credentials file (JWT and seed), when the servers
	// ask for one; CA a PEM file of the authorities a tls:// server's
	// certificate is checked against (default: the system's).
	Creds, CA string
	// Node is this supervisor's name in the fleet.
	Node   string
	Labels map[string]string
	// Fleet names the fleet (default "corral"); Replicas is how many NATS
	// servers keep its state (default 3 in a cluster, else 1).
	Fleet    string
	Replicas int
	Timing   fleet.Timing
	// StateDir is the supervisor's own folder (the node's lasting
	// identity is kept there); StorageDir the folder of its sessions and
	// workspaces, which nodes on shared storage have in common.
	StateDir, StorageDir string
	// MaxLive is the supervisor's cap on live runners until the manager
	// is attached; then the manager's own (which a reload changes) counts.
	MaxLive func() int
	// Engines are the engines this supervisor can run.
	Engines []string
	Version string
	Logger  *zap.Logger
}

// Fleet is this supervisor's membership of a fleet.
type Fleet struct {
	cfg   Config
	log   *zap.Logger
	nc    *nats.Conn
	node  *fleet.Node
	local *local
	terms *bridges

	// background work started by Attach, ended by Leave
	stop context.CancelFunc
	wg   sync.WaitGroup
}

// Join connects to the fleet's NATS servers and joins it as cfg.Node. The
// supervisor's manager is made with Claims and OwnsSession, then given to
// Attach, which starts serving.
func Join(ctx context.Context, cfg Config) (*Fleet, error) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if len(cfg.NATS) == 0 {
		return nil, errors.New("fleet: no NATS server URL")
	}
	storage, err := storageID(cfg.StorageDir)
	if err != nil {
		return nil, err
	}
	identity, err := nodeIdentity(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	opts := []nats.Option{
		nats.Name("corral supervisor " + cfg.Node),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		// Nothing is held back while the link is down: a request or a
		// renewal then fails at once instead of landing late.
		nats.ReconnectBufSize(-1),
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(3),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("fleet: NATS link down", zap.Error(err))
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("fleet: NATS link up again", zap.String("server", nc.ConnectedUrlRedacted()))
		}),
	}
	if cfg.Creds != "" {
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.CA))
	}
	nc, err := nats.Connect(strings.Join(cfg.NATS, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("fleet: connect to NATS: %w", err)
	}
	l := &local{storage: cfg.StorageDir, maxLive: cfg.MaxLive}
	f := &Fleet{cfg: cfg, log: log, nc: nc, local: l}
	f.terms = newBridges(f)
	node, err := fleet.Join(ctx, nc, fleet.Config{
		Fabric:   fleet.FabricConfig{Fleet: cfg.Fleet, Replicas: cfg.Replicas, Timing: cfg.Timing},
		Node:     cfg.Node,
		Identity: identity,
		Labels:   cfg.Labels,
		Engines:  cfg.Engines,
		Storage:  storage,
		Version:  cfg.Version,
		Handlers: f.handlers(),
		Logger:   log,
	}, l)
	if err != nil {
		nc.Close()
		return nil, err
	}
	f.node = node
	return f, nil
}

// Claims grants the claims the manager asks for before it starts a runner.
func (f *Fleet) Claims() supervisor.Claimer { return claimer{f} }

// OwnsSession says whether session id belongs to this node (or to no node
// yet): the manager sweeps stale runners of those only.
func (f *Fleet) OwnsSession(id string) bool {
	rec, err := f.node.Record(context.Background(), id)
	return err != nil || rec.Node == f.node.Name()
}

// Attach gives the fleet the supervisor's manager: sessions in the
// storage folder that the fleet does not know yet join the catalog as
// this node's, the node starts taking over sessions of nodes that leave,
// and the returned Sessions serves the whole fleet.
func (f *Fleet) Attach(ctx context.Context, m *supervisor.Manager) (httpapi.Sessions, error) {
	f.local.m.Store(m)
	if err := f.registerLocal(ctx); err != nil {
		return nil, err
	}
	bg, stop := context.WithCancel(context.Background())
	f.stop = stop
	f.publishLifecycles(bg, &f.wg, m)
	f.node.Start()
	return &routed{f: f, m: m}, nil
}

// registerLocal adds the sessions of the storage folder that no node
// claims: a supervisor that joins a fleet keeps the sessions it had.
func (f *Fleet) registerLocal(ctx context.Context) error {
	des, err := os.ReadDir(filepath.Join(f.cfg.StorageDir, "sessions"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("fleet: list sessions: %w", err)
	}
	for _, de := range des {
		id := de.Name()
		if !de.IsDir() || !sessiondir.ValidID(id) {
			continue
		}
		if _, err := f.node.Record(ctx, id); err == nil || !errors.Is(err, wire.ErrNotFound) {
			continue
		}
		if err := f.register(ctx, id, fleet.Placement{Node: f.node.Name(), Reason: "was on this node when it joined the fleet"}); err != nil && !errors.Is(err, wire.ErrConflict) {
			f.log.Warn("session not added to the fleet", zap.String("session", id), zap.Error(err))
		}
	}
	return nil
}

// register adds session id, whose folder is here, to the catalog as this
// node's.
func (f *Fleet) register(ctx context.Context, id string, p fleet.Placement) error {
	spec, ok, err := sessiondir.ReadSpec(f.local.dir(id))
	if err != nil {
		return err
	}
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "session %s not found", id)
	}
	return f.node.Register(ctx, id, spec.Engine, p)
}

// Leave leaves the fleet once the manager has stopped every runner.
func (f *Fleet) Leave(ctx context.Context) error {
	if f.stop != nil {
		f.stop()
	}
	f.wg.Wait()
	f.terms.closeAll()
	err := f.node.Close(ctx)
	f.nc.Close()
	return err
}

// Node is the fleet node.
func (f *Fleet) Node() *fleet.Node { return f.node }

// NotReady says why the node cannot take work now: its link to the
// fleet's NATS servers is down.
func (f *Fleet) NotReady() []string {
	if f.nc.IsConnected() {
		return nil
	}
	return []string{"the link to the fleet's NATS servers is down (" + strings.ToLower(f.nc.Status().String()) + ")"}
}

// OnLink has report told the state of the link to the fleet's NATS
// servers now and at every change.
func (f *Fleet) OnLink(report func(metrics.LinkState)) {
	state := func() metrics.LinkState {
		switch {
		case f.nc.IsConnected():
			return metrics.LinkConnected
		case f.nc.IsClosed():
			return metrics.LinkClosed
		default:
			return metrics.LinkReconnecting
		}
	}
	report(state())
	f.nc.SetDisconnectErrHandler(func(_ *nats.Conn, err error) {
		f.log.Warn("fleet: NATS link down", zap.Error(err))
		report(state())
	})
	f.nc.SetReconnectHandler(func(nc *nats.Conn) {
		f.log.Info("fleet: NATS link up again", zap.String("server", nc.ConnectedUrlRedacted()))
		report(state())
	})
	f.nc.SetClosedHandler(func(*nats.Conn) { report(metrics.LinkClosed) })
}

// claimer holds a session's lease while its runner lives here.
type claimer struct{ f *Fleet }

func (c claimer) Claim(ctx context.Context, id string) (supervisor.Claim, error) {
	if _, err := c.f.node.Record(ctx, id); errors.Is(err, wire.ErrNotFound) {
		// A session made here (created, or a fork): it is this node's.
		err := c.f.register(ctx, id, fleet.Placement{Node: c.f.node.Name(), Reason: "made on this node"})
		if err != nil && !errors.Is(err, wire.ErrConflict) {
			return nil, err
		}
	}
	return c.f.node.Hold(ctx, id)
}

// local is the fleet's view of this supervisor's manager (fleet.Local).
type local struct {
	m       atomic.Pointer[supervisor.Manager]
	storage string
	maxLive func() int
}

func (l *local) dir(id string) string { return filepath.Join(l.storage, "sessions", id) }

func (l *local) manager() (*supervisor.Manager, error) {
	m := l.m.Load()
	if m == nil {
		return nil, wire.Errorf(wire.CodeUnavailable, "the supervisor is starting")
	}
	return m, nil
}

func (l *local) Events(ctx context.Context, id string, from int64, follow bool) (fleet.EventStream, error) {
	m, err := l.manager()
	if err != nil {
		return nil, err
	}
	s, err := m.Events(ctx, id, from, follow)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func (l *local) Capacity() fleet.Capacity {
	c := fleet.Capacity{MemAvailable: memAvailable()}
	if l.maxLive != nil {
		c.MaxLive = l.maxLive()
	}
	// Once attached, the manager's cap is the one that holds: a reload
	// (SIGHUP) changes it there. Placement counts the runners starting
	// and stopping too (Manager.Load).
	if m := l.m.Load(); m != nil {
		c.Live, c.MaxLive = m.Load(), m.MaxLive()
	}
	return c
}

func (l *local) Resume(ctx context.Context, id string) error {
	m, err := l.manager()
	if err != nil {
		return err
	}
	return m.Wake(ctx, id)
}

func (l *local) StopRunner(id string, deadline time.Time) {
	if m := l.m.Load(); m != nil {
		m.StopRunner(id, deadline)
	}
}

func (l *local) Reachable(id string) bool {
	_, err := os.Stat(filepath.Join(l.dir(id), sessiondir.MetaFile))
	return err == nil
}

// storageID names the storage of dir: nodes whose storage folders hold the
// same storage-id file share it. The first node to use a folder writes it.
func storageID(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("fleet: storage folder: %w", err)
	}
	return readOrMakeID(filepath.Join(dir, "storage-id"))
}

// nodeIdentity is the node's lasting identity, kept in its state folder.
func nodeIdentity(state string) (string, error) {
	if err := os.MkdirAll(state, 0o700); err != nil {
		return "", fmt.Errorf("fleet: state folder: %w", err)
	}
	return readOrMakeID(filepath.Join(state, "fleet-node-id"))
}

// readOrMakeID reads the id in file, writing a new random one when there
// is none yet: written whole to a file of its own and linked in place, so
// of two writers one wins and both read its id.
func readOrMakeID(file string) (string, error) {
	raw, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		tmp, terr := os.CreateTemp(filepath.Dir(file), ".id-*")
		if terr != nil {
			return "", fmt.Errorf("fleet: %w", terr)
		}
		defer os.Remove(tmp.Name())
		_, werr := tmp.WriteString(hex.EncodeToString(b[:]) + "\n")
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", fmt.Errorf("fleet: write %s: %w", file, werr)
		}
		if lerr := os.Link(tmp.Name(), file); lerr != nil && !errors.Is(lerr, os.ErrExist) {
			return "", fmt.Errorf("fleet: %w", lerr)
		}
		raw, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("fleet: %w", err)
	}
	id := strings.TrimSpace(string(raw))
	if id == "" || len(id) > 64 {
		return "", fmt.Errorf("fleet: %s holds no id", file)
	}
	return id, nil
}

// InstalledEngines lists the engines this machine can run: the built-in
// script engine, and each agent CLI engine whose program is found (in
// enginesDir's pinned install, else on PATH).
func InstalledEngines(enginesDir string) []string {
	out := []string{"script"}
	for _, e := range []string{"claude", "codex", "copilot"} {
		if _, _, err := locate.Binary(e, map[string]string{locate.KeyEnginesDir: enginesDir}); err == nil {
			out = append(out, e)
		}
	}
	return out
}

// memAvailable is the memory the kernel could still give processes
// (MemAvailable in /proc/meminfo), 0 when unknown.
func memAvailable() uint64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemAvailable:"); ok {
			var kb uint64
			fmt.Sscan(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), &kb)
			return kb << 10
		}
	}
	return 0
}
