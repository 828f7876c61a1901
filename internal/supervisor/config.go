package supervisor

import (
	"errors"
	"fmt"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/pkg/wire"
	"go.uber.org/zap"
)

// Config configures a Manager. StateDir and RunnerPath are required; every
// duration has a default.
type Config struct {
	// StateDir is the supervisor's own folder; by default it also holds
	// sessions/<id>/ folders (StorageDir).
	StateDir string
	// RunnerPath is the runner executable.
	RunnerPath string
	// PluginRunnerPath is the runner build that also drives plugin
	// engines, started for sessions whose spec NeedsPlugin (default
	// RunnerPath).
	PluginRunnerPath string
	// MaxLive caps the runners live at once (default 64): past it the least
	// recently used idle one is stopped, and when none is idle a start
	// fails with unavailable.
	MaxLive int
	// MaxWaiting is the separate budget of runners whose session waits
	// for a person (default 64; wire.StateReport.WaitsForPerson): up to
	// it, they do not count against MaxLive, so sessions waiting on an
	// ask or a review never make a new session fail.
	MaxWaiting int
	// SpareRunner keeps one runner started ahead of need, so that
	// creating or waking a session on a built-in engine does not wait for
	// a process to start.
	SpareRunner bool
	// Prewarm keeps, for each engine that can start ahead (Claude Code,
	// Codex) and a session was recently created on, one runner whose
	// engine process is already started and initialized for a session of
	// the same shape, so that the next such session's first turn does not
	// wait for the CLI to start (prewarm.go, docs/engines.md).
	Prewarm bool
	// Env is added to each runner's environment (after the inherited one,
	// cleaned of credentials).
	Env []string
	// Credentials, when set, are read at each runner's start for the
	// items its session's engine uses (internal/engines/catalog), and go
	// to the runner inside live.ensure, never into a file or a log.
	Credentials Credentials
	// EngineDefaults are, by engine, the settings every new session on it
	// gets under its own engineConfig (serve --engine-config). They must
	// pass catalog.Check.
	EngineDefaults map[string]wire.EngineConfig

	// IdleTTL is how long a runner may sit idle before it is stopped
	// (default 5 minutes).
	IdleTTL time.Duration
	// ReapInterval is how often RunReaper looks (default IdleTTL/4,
	// between 10ms and 30s).
	ReapInterval time.Duration
	// ShutdownGrace is how long a runner has to exit after shutdown
	// before its group gets SIGTERM (default 5s).
	ShutdownGrace time.Duration
	// KillGrace is how long after SIGTERM the group gets SIGKILL
	// (default 2s).
	KillGrace time.Duration
	// RunnerGrace, when positive, lets sessions outlive the supervisor:
	// runners are started without a parent-death signal and told to wait
	// this long for a supervisor to re-attach when theirs goes away
	// (crash, kill -9, Shutdown, which then lets them go instead of
	// stopping them); a Manager adopts the runners of its state folder
	// that are still waiting (adopt_linux.go). Zero: runners die with their
	// supervisor (serve --stop-runners-on-exit).
	RunnerGrace time.Duration
	// Cgroups says whether each runner, and everything it starts, lives
	// in a cgroup (v2) of its own, swept when the runner ends (cgroups.go):
	// cgroup.Auto where the system allows it, cgroup.Required or else New
	// fails, cgroup.Off (the zero value) never.
	Cgroups cgroup.Mode
	// RunnerLimits are written to each runner's cgroup (memory.max,
	// pids.max, cpu.weight). They need Cgroups; a controller that is not
	// available fails New with cgroup.Required, else is a warning.
	RunnerLimits cgroup.Limits
	// StartTimeout bounds a runner's start: handshake and live.ensure
	// (default 30s).
	StartTimeout time.Duration
	// CallTimeout bounds a call to a runner whose context has no deadline
	// (default 30s).
	CallTimeout time.Duration

	// MaxLine bounds one protocol line and one event line (default
	// wire.DefaultMaxLine).
	MaxLine int
	// SubscriberBuffer is how many events a live subscriber may fall
	// behind before it is moved back to reading the log (default 1024).
	SubscriberBuffer int
	// FeedItems and FeedBytes bound the recent items the multiplexed
	// stream keeps for subscribers that lag or resume (defaults 65536
	// items, 32 MiB of event lines).
	FeedItems, FeedBytes int

	// StorageDir holds the sessions/ and workspaces/ folders (default
	// StateDir). Supervisors of a fleet that share it reach each other's
	// sessions (docs/fleet.md).
	StorageDir string
	// Claims, when set, grants the claim a runner needs before it starts
	// (a fleet's lease: claims.go).
	Claims Claimer
	// OwnsSession, when set, says whether a session folder is this
	// supervisor's: a runner of one that is not (another supervisor's, on
	// shared storage) is never swept as stale.
	OwnsSession func(id string) bool

	Logger *zap.Logger
	// Observer is told of session starts, mirrored events and runner
	// exits, for metrics (default: nobody).
	Observer Observer
	// Now is the reaper's clock (default time.Now).
	Now func() time.Time
}

// Credentials are where the secrets the supervisor hands its runners are
// kept (creds.Secrets: the OS keyring or a credentials file).
type Credentials interface {
	// Pick returns the secrets of those items that are set. When the
	// store cannot be read it returns what it could read and why.
	Pick(items []string) (map[string]string, error)
}

func (c *Config) setDefaults() error {
	if c.StateDir == "" {
		return errors.New("supervisor: state directory is required")
	}
	if c.StorageDir == "" {
		c.StorageDir = c.StateDir
	}
	if c.RunnerPath == "" {
		return errors.New("supervisor: runner path is required")
	}
	for engine, defaults := range c.EngineDefaults {
		if err := catalog.Check(engine, defaults); err != nil {
			return fmt.Errorf("supervisor: engine defaults: %w", err)
		}
	}
	if c.PluginRunnerPath == "" {
		c.PluginRunnerPath = c.RunnerPath
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.IdleTTL, 5*time.Minute)
	def(&c.ReapInterval, min(max(c.IdleTTL/4, 10*time.Millisecond), 30*time.Second))
	def(&c.ShutdownGrace, 5*time.Second)
	def(&c.KillGrace, 2*time.Second)
	def(&c.StartTimeout, 30*time.Second)
	def(&c.CallTimeout, 30*time.Second)
	if c.MaxLive <= 0 {
		c.MaxLive = 64
	}
	if c.MaxWaiting <= 0 {
		c.MaxWaiting = 64
	}
	if c.MaxLine <= 0 {
		c.MaxLine = wire.DefaultMaxLine
	}
	if c.FeedItems <= 0 {
		c.FeedItems = 1 << 16
	}
	if c.FeedBytes <= 0 {
		c.FeedBytes = 32 << 20
	}
	if c.SubscriberBuffer <= 0 {
		c.SubscriberBuffer = 1024
	}
	if c.Logger == nil {
		c.Logger = zap.NewNop()
	}
	if c.Observer == nil {
		c.Observer = nopObserver{}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}
