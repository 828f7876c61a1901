package doctor

import (
	"context"
	"crypto/rand"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/proc"
)

// checkReplays replays each engine's golden turn on its installed CLI,
// through the runner (which links the engines; the supervisor does not):
// the CLI is supported when its protocol is, frame by frame, the one
// recorded for its version (Config.Replay).
func checkReplays(ctx context.Context, cfg Config) []Result {
	runner, err := findRunner(cfg)
	return each(cfg.Engines, func(name string) Result {
		check := "replay " + name
		if err != nil {
			return failed(check, "install runner beside the supervisor (make build puts both in bin/) or pass --runner", "no runner to replay with: %v", err)
		}
		return replay(ctx, cfg, runner, name)
	})
}

func replay(ctx context.Context, cfg Config, runner, name string) Result {
	check := "replay " + name
	scenario, known := engineprobe.GoldenScenario(name)
	if !known {
		return warned(check, "its CLI's version is checked above, and the engine's golden test checks its protocol where the tests run",
			"the doctor cannot replay the %s engine's golden turn yet", name)
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.CLITimeout)
	defer cancel()
	req, stop, err := serveGolden(ctx, name, scenario)
	if err != nil {
		return failed(check, "this is a fault of the doctor's own: report it", "the fake model for the replay: %v", err)
	}
	defer stop()
	req.EnginesDir = cfg.EnginesDir
	r, err := engineprobe.RunReplay(ctx, runner, proc.BaseEnv(), req)
	switch {
	case err != nil:
		return failed(check, "check the runner (supervisor doctor) and the CLI (the engine check above); give a first run longer with --cli-timeout", "%v", err)
	case r.OK:
		return ok(check, "%s: the golden turn's protocol is the one recorded for this version, frame by frame", r.Version)
	case r.Unknown:
		return warned(check, "use the runner built with this supervisor (make build puts both in bin/)", "%s", r.Error)
	case r.NoGolden:
		return warned(check, "record this version's golden turn (the engine's golden test with -update) once it is tested, or install a recorded version (deploy/engines/install.sh)", "%s", r.Error)
	default:
		return failed(check, "install a supported CLI (deploy/engines/install.sh); this one's protocol differs from the recorded one", "%s: %s", r.Version, r.Error)
	}
}

// serveGolden makes the folders of a replay and serves the golden
// scenario on loopback for it, accepting a key made for the replay alone;
// stop stops the server and removes the folders.
func serveGolden(ctx context.Context, name string, scenario []byte) (req engineprobe.ReplayRequest, stop func(), err error) {
	sc, err := fakemodel.ParseScenario(scenario)
	if err != nil {
		return req, nil, err
	}
	root, err := os.MkdirTemp("", "corral-replay-"+name+"-")
	if err != nil {
		return req, nil, err
	}
	req = engineprobe.ReplayRequest{Engine: name, Key: "corral-replay-" + rand.Text(),
		Dir: filepath.Join(root, "session"), Cwd: filepath.Join(root, "worktree"), Home: filepath.Join(root, "home")}
	for _, d := range []string{req.Dir, req.Cwd, req.Home} {
		if err := os.Mkdir(d, 0o700); err != nil {
			os.RemoveAll(root)
			return req, nil, err
		}
	}
	sc.Auth = &fakemodel.Auth{APIKey: req.Key}
	srv := fakemodel.New(sc, fakemodel.WithVars(map[string]string{"cwd": req.Cwd}))
	if req.ModelEndpoint, err = srv.Start(ctx, "127.0.0.1:0"); err != nil {
		os.RemoveAll(root)
		return req, nil, err
	}
	return req, func() { srv.Close(); os.RemoveAll(root) }, nil
}
