// Package daemon runs a supervisor: it takes the state folder's lock,
// starts the session manager, serves the HTTP API on the state folder's
// unix socket (and optionally on TCP, with TLS or without, behind the
// webauth guard), reaps idle runners, and on SIGINT or SIGTERM shuts every
// runner down before it exits.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/cgroup"
	"github.com/corral-dev/corral/internal/console"
	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/fleet/sessions"
	"github.com/corral-dev/corral/internal/graph/drivers"
	"github.com/corral-dev/corral/internal/graph/service"
	"github.com/corral-dev/corral/internal/metrics"
	"github.com/corral-dev/corral/internal/ownedfile"
	"github.com/corral-dev/corral/internal/sdnotify"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/httpapi"
	"github.com/corral-dev/corral/internal/supervisor/webauth"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/oklog/run"
	"go.uber.org/zap"
	"golang.org/x/net/netutil"
)

// Files in the state folder.
const (
	SocketName = "supervisor.sock"
	TokenName  = "token"
	lockName   = "supervisor.lock"
)

// Config configures a supervisor daemon.
type Config struct {
	// StateDir is the state folder; it is created with mode 0700.
	StateDir string
	// RunnerPath is the runner executable; empty means FindRunner's choice.
	RunnerPath string
	// PluginRunnerPath is the runner build with plugin engines; empty
	// means plugin-runner beside the runner, else on PATH, else none
	// (sessions on plugin engines then fail to start, saying why).
	PluginRunnerPath string
	// SpareRunner keeps a runner started ahead of need, and MaxLive caps
	// the live runners (see supervisor.Config).
	SpareRunner bool
	MaxLive     int
	// MaxWaiting is supervisor.Config.MaxWaiting.
	MaxWaiting int
	// Prewarm keeps an engine process started ahead for the next session
	// on Claude Code or Codex (see supervisor.Config).
	Prewarm bool
	// Listen, when set, is a TCP address to serve too; every request on
	// it needs a credential (the bearer token, a session cookie or a
	// ticket) and a Host that names the supervisor (webauth).
	Listen string
	// AllowOrigins are the web origins whose pages may call the API (CORS),
	// and AllowHosts more names the Host header may carry; see
	// webauth.Config.
	AllowOrigins, AllowHosts []string
	// TLSCert and TLSKey, both or neither, make Listen serve HTTPS.
	TLSCert, TLSKey string
	// MaxConns caps the connections open at once on each listener
	// (DefaultMaxConns when zero; at most a quarter of the open-file
	// limit).
	MaxConns int
	// TokenFile holds the bearer token for TCP; empty means <state>/token,
	// generated when missing.
	TokenFile string
	// CredentialsFile is a 0600 credentials file whose items runners get;
	// empty means the OS keyring.
	CredentialsFile string
	// EngineDefaults are, by engine, settings every new session gets under
	// its own engineConfig (supervisor.Config).
	EngineDefaults map[string]wire.EngineConfig
	// EnginesDir is passed to runners as CORRAL_ENGINES_DIR.
	EnginesDir string
	// IdleTTL is how long an idle runner lives (default 5 minutes).
	IdleTTL time.Duration
	// RunnerGrace lets sessions outlive the supervisor: how long a runner
	// whose supervisor went away waits for the next one to re-attach
	// (supervisor.Config). Zero: runners stop with the supervisor.
	RunnerGrace time.Duration
	// ShutdownGrace and KillGrace tune how runners are stopped (defaults
	// in supervisor.Config).
	ShutdownGrace, KillGrace time.Duration
	// Cgroups and RunnerLimits put each runner in a cgroup of its own,
	// with those limits (supervisor.Config).
	Cgroups      cgroup.Mode
	RunnerLimits cgroup.Limits

	// MetricsListen, when set, is a loopback TCP address serving
	// /metrics without authentication, for a scraper on this machine.
	// /metrics is also served on every other listener, behind its auth.
	MetricsListen string

	// StorageDir holds sessions/ and workspaces/ (default StateDir).
	StorageDir string
	// Fleet, when set, joins a fleet of supervisors over NATS
	// (docs/fleet.md); the daemon fills in the folders, the cap and the
	// logger.
	Fleet *sessions.Config

	Logger *zap.Logger
	// LogLevel, when set, is Logger's level, which a reload changes.
	LogLevel *zap.AtomicLevel
	// Reload, when set, is called on SIGHUP for the settings to apply
	// without a restart. Without it SIGHUP is logged and ignored.
	Reload func() (Settings, error)
	// Ready, when set, is called once every listener is up.
	Ready func(Listening)
}

// Listening says where a started daemon serves.
type Listening struct {
	Socket      string
	TCPAddr     string // empty without Listen
	MetricsAddr string // empty without MetricsListen
	// URL is the TCP listener's base URL (http://... or https://...),
	// empty without Listen.
	URL string
}

// FindRunner returns the runner executable: path when given, else the file
// named runner next to this executable, else runner on PATH.
func FindRunner(path string) (string, error) {
	return findProgram(path, "runner", "")
}

// FindPluginRunner returns the plugin-runner executable: path when given,
// else the file named plugin-runner next to runner (the runner the
// supervisor uses), else next to this executable, else on PATH.
func FindPluginRunner(path, runner string) (string, error) {
	return findProgram(path, "plugin-runner", filepath.Dir(runner))
}

// findProgram returns path when given, else name in dir (when dir is not
// empty), else beside this executable, else on PATH.
func findProgram(path, name, dir string) (string, error) {
	if path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("%s: %w", name, err)
		}
		return filepath.Abs(path)
	}
	var dirs []string
	if dir != "" {
		dirs = append(dirs, dir)
	}
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Dir(exe))
	}
	for _, d := range dirs {
		beside := filepath.Join(d, name)
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
			return beside, nil
		}
	}
	found, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found next to the supervisor nor on PATH; build it (make build) or pass --%s", name, name)
	}
	return filepath.Abs(found)
}

// Run serves until ctx ends or a signal arrives, then stops every runner.
func Run(ctx context.Context, cfg Config) error {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	notify, err := sdnotify.FromEnv()
	if err != nil {
		log.Warn("not telling the service manager", zap.Error(err))
	}
	// SIGHUP reloads from now on instead of killing the supervisor.
	var m *supervisor.Manager
	met := newMetrics(&m)
	reload := &reloader{log: log, level: cfg.LogLevel, load: cfg.Reload, met: met, notify: notify}
	defer reload.listen()()
	state, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	// Another user's folder, or one others may write, would let them
	// plant the token, the lock or session specs.
	if err := ownedfile.EnsureDir(state); err != nil {
		return fmt.Errorf("state folder: %w", err)
	}
	unlock, err := lockState(state)
	if err != nil {
		return err
	}
	defer unlock()

	runner, err := FindRunner(cfg.RunnerPath)
	if err != nil {
		return err
	}
	// Without plugin-runner only plugin sessions are affected: the runner
	// refuses their engine, saying it is not built in.
	pluginRunner, err := FindPluginRunner(cfg.PluginRunnerPath, runner)
	if err != nil {
		if cfg.PluginRunnerPath != "" {
			return err
		}
		log.Info("no plugin-runner: sessions on plugin engines cannot start", zap.Error(err))
	}
	storage := state
	if cfg.StorageDir != "" {
		if storage, err = filepath.Abs(cfg.StorageDir); err != nil {
			return fmt.Errorf("storage folder: %w", err)
		}
	}
	mcfg := supervisor.Config{
		StateDir:         state,
		StorageDir:       storage,
		RunnerPath:       runner,
		PluginRunnerPath: pluginRunner,
		SpareRunner:      cfg.SpareRunner,
		Prewarm:          cfg.Prewarm,
		MaxLive:          cfg.MaxLive,
		MaxWaiting:       cfg.MaxWaiting,
		EngineDefaults:   cfg.EngineDefaults,
		IdleTTL:          cfg.IdleTTL,
		RunnerGrace:      cfg.RunnerGrace,
		ShutdownGrace:    cfg.ShutdownGrace,
		KillGrace:        cfg.KillGrace,
		Cgroups:          cfg.Cgroups,
		RunnerLimits:     cfg.RunnerLimits,
		Logger:           log,
		Observer:         met,
	}
	if cfg.EnginesDir != "" {
		dir, err := filepath.Abs(cfg.EnginesDir)
		if err != nil {
			return fmt.Errorf("engines folder: %w", err)
		}
		mcfg.Env = append(mcfg.Env, "CORRAL_ENGINES_DIR="+dir)
	}
	// Runners get their engine's credentials from the credentials file
	// when one is given, else from the OS keyring, as a standalone runner
	// does.
	secrets := creds.NewKeyring(creds.OSKeyring{})
	if cfg.CredentialsFile != "" {
		if secrets, err = creds.OpenFile(cfg.CredentialsFile); err != nil {
			return err
		}
	}
	mcfg.Credentials = secrets
	var fl *sessions.Fleet
	if cfg.Fleet != nil {
		if fl, err = joinFleet(ctx, cfg, state, storage, log); err != nil {
			return err
		}
		// Left once every runner is stopped (deferred calls run last
		// first).
		defer func() {
			lctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := fl.Leave(lctx); err != nil {
				log.Error("leaving the fleet", zap.Error(err))
			}
		}()
		mcfg.Claims, mcfg.OwnsSession = fl.Claims(), fl.OwnsSession
		if mcfg.RunnerGrace > 0 {
			// Another member takes a dead member's sessions over: a
			// runner outliving its supervisor would then share its
			// session with the new one's (docs/fleet.md).
			log.Info("in a fleet, runners stop with their supervisor; --runner-grace is not used")
			mcfg.RunnerGrace = 0
		}
	}
	m, err = supervisor.New(mcfg)
	if err != nil {
		return err
	}
	reload.m = m
	met.SetMaxLive(m.MaxLive())
	// Runners stop whatever way Run ends.
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := m.Shutdown(sctx); err != nil {
			log.Error("stopping runners", zap.Error(err))
		}
	}()

	// Graph runs' nodes run in this supervisor's own sessions.
	graphs, err := service.New(service.Config{State: state, Sessions: drivers.Manager(m), Probe: true, Logger: log.Named("graph")})
	if err != nil {
		return err
	}
	var token string
	if cfg.Listen != "" {
		if token, err = loadToken(state, cfg.TokenFile); err != nil {
			return err
		}
	}
	// The console's page and files are public: a browser loads them
	// before it signs in.
	auth, err := webauth.New(webauth.Config{Token: token, AllowOrigins: cfg.AllowOrigins, AllowHosts: cfg.AllowHosts,
		PublicPaths: []string{"/", "/assets/"}})
	if err != nil {
		return err
	}
	reload.auth = auth
	served := httpapi.FromManager(m)
	var notReady func() []string
	if fl != nil {
		if served, err = fl.Attach(ctx, m); err != nil {
			return err
		}
		notReady = fl.NotReady
		fl.OnLink(func(s metrics.LinkState) { met.SetNATSLink(s) })
	}
	api := httpapi.New(served, httpapi.Options{Logger: log, Auth: auth, Console: console.Handler(console.Assets()), Metrics: met.Handler(), NotReady: notReady, Graphs: graphs, Credentials: secrets})
	socket := filepath.Join(state, SocketName)
	unixLn, err := listenUnix(socket)
	if err != nil {
		return err
	}
	// Closing the listener removes the socket file.
	defer unixLn.Close()
	where := Listening{Socket: socket}

	var g run.Group
	g.Add(run.SignalHandler(ctx, os.Interrupt, syscall.SIGTERM))
	addServer(&g, log, netutil.LimitListener(unixLn, connCap(cfg.MaxConns)), auth.Guard(webauth.Listener{Local: true}, api))
	if cfg.Listen != "" {
		tcpLn, err := listenTCP(cfg.Listen, cfg.TLSCert, cfg.TLSKey, cfg.MaxConns)
		if err != nil {
			return err
		}
		defer tcpLn.Close()
		tls := cfg.TLSCert != ""
		where.TCPAddr = tcpLn.Addr().String()
		where.URL = "http://" + where.TCPAddr
		if tls {
			where.URL = "https://" + where.TCPAddr
		}
		addServer(&g, log, tcpLn, auth.Guard(webauth.Listener{Addr: where.TCPAddr, TLS: tls}, api))
	}
	if cfg.MetricsListen != "" {
		metricsLn, err := listenMetrics(cfg.MetricsListen)
		if err != nil {
			return err
		}
		defer metricsLn.Close()
		where.MetricsAddr = metricsLn.Addr().String()
		addServer(&g, log, netutil.LimitListener(metricsLn, connCap(cfg.MaxConns)), metricsOnly(met))
	}
	background, stopBackground := context.WithCancel(context.Background())
	g.Add(func() error { return m.RunReaper(background) }, func(error) { stopBackground() })
	g.Add(func() error { return reload.run(background) }, func(error) { stopBackground() })
	g.Add(func() error { return watchdog(background, log, notify, m) }, func(error) { stopBackground() })

	log.Info("supervisor serving", zap.String("socket", where.Socket), zap.String("tcp", where.TCPAddr),
		zap.String("state", state), zap.String("runner", runner))
	if cfg.Ready != nil {
		cfg.Ready(where)
	}
	if err := notify.Notify(sdnotify.Ready, "STATUS=serving"); err != nil {
		log.Warn("telling the service manager", zap.Error(err))
	}
	err = g.Run()
	if nerr := notify.Notify(sdnotify.Stopping, "STATUS=stopping runners"); nerr != nil {
		log.Warn("telling the service manager", zap.Error(nerr))
	}
	var sig run.SignalError
	if errors.As(err, &sig) || errors.Is(err, context.Canceled) {
		log.Info("supervisor stopping", zap.Error(err))
		return nil
	}
	return err
}

// joinFleet joins the fleet cfg.Fleet names, waiting as long as it takes a
// registration of this node's name by another supervisor to expire.
func joinFleet(ctx context.Context, cfg Config, state, storage string, log *zap.Logger) (*sessions.Fleet, error) {
	fc := *cfg.Fleet
	fc.StateDir, fc.StorageDir, fc.Logger = state, storage, log
	maxLive := cfg.MaxLive
	fc.MaxLive = func() int { return maxLive }
	if len(fc.Engines) == 0 {
		fc.Engines = sessions.InstalledEngines(cfg.EnginesDir)
	}
	nodeTTL := fc.Timing.NodeTTL
	if nodeTTL <= 0 {
		nodeTTL = fleet.DefaultTiming().NodeTTL
	}
	wait := 2*nodeTTL + time.Minute
	jctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	fl, err := sessions.Join(jctx, fc)
	if err != nil {
		return nil, fmt.Errorf("join the fleet: %w", err)
	}
	log.Info("in the fleet", zap.String("node", fc.Node), zap.Strings("engines", fc.Engines))
	return fl, nil
}
