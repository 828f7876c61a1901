package doctor

import (
	"context"

	"github.com/corral-dev/corral/internal/engineprobe"
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
	ctx, cancel := context.WithTimeout(ctx, cfg.CLITimeout)
	defer cancel()
	r, err := engineprobe.RunReplay(ctx, runner, proc.BaseEnv(), engineprobe.ReplayRequest{Engine: name, EnginesDir: cfg.EnginesDir})
	switch {
	case err != nil:
		return failed(check, "check the runner (supervisor doctor) and the CLI (the engine check above); give a first run longer with --cli-timeout", "%v", err)
	case r.OK:
		return ok(check, "%s: the golden turn's protocol is the one recorded for this version, frame by frame", r.Version)
	case r.Unknown:
		return warned(check, "its CLI's version is checked above, and the engine's golden test checks its protocol where the tests run", "%s", r.Error)
	case r.NoGolden:
		return warned(check, "record this version's golden turn (the engine's golden test with -update) once it is tested, or install a recorded version (deploy/engines/install.sh)", "%s", r.Error)
	default:
		return failed(check, "install a supported CLI (deploy/engines/install.sh); this one's protocol differs from the recorded one", "%s: %s", r.Version, r.Error)
	}
}
