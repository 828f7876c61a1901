package engineprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/transcript"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// ReplayFlag is the runner's flag that makes it replay an engine's golden
// turn: `supervisor doctor engines` starts `runner --replay`, writes a
// ReplayRequest on its standard input and reads a ReplayReply from its
// standard output, as for a probe.
const ReplayFlag = "--replay"

// Replay plays an engine's golden turn on the CLI
// installed in req.EnginesDir (empty: PATH), with env as the CLI's base
// environment, against the fake model at req.ModelEndpoint playing the
// engine's GoldenScenario, and compares the protocol with the transcript
// recorded for the CLI's version. It returns that version, and an error
// naming the first differing frame when they differ (transcript.ErrNoGolden
// wrapped when no transcript is recorded for the version).
type Replay func(ctx context.Context, req ReplayRequest, env []string) (version string, err error)

// ReplayRequest asks a runner to replay one engine's golden turn.
type ReplayRequest struct {
	Engine     string `json:"engine"`
	EnginesDir string `json:"enginesDir,omitempty"`
	// ModelEndpoint serves the engine's GoldenScenario, accepting Key.
	ModelEndpoint string `json:"modelEndpoint"`
	Key           string `json:"key"`
	// Dir, Cwd and Home are empty folders for the session, its worktree
	// (the scenario's ${cwd}) and the CLI's home.
	Dir  string `json:"dir"`
	Cwd  string `json:"cwd"`
	Home string `json:"home"`
}

// StartOptions are the session a replay starts: in r's folders, on the
// CLI in r.EnginesDir, against r.ModelEndpoint with r.Key as the
// credential item, env (proc.BaseEnv) with HOME set to r.Home, and a host
// whose gate is decide (nil allows every call) and which records nothing.
func (r ReplayRequest) StartOptions(env []string, credential string, decide func(context.Context, engine.ToolCall) engine.Verdict) engine.StartOptions {
	cliEnv := []string{"HOME=" + r.Home}
	for _, kv := range env {
		if !strings.HasPrefix(kv, "HOME=") {
			cliEnv = append(cliEnv, kv)
		}
	}
	return engine.StartOptions{
		SessionID:     "replay",
		Dir:           r.Dir,
		Cwd:           r.Cwd,
		ModelEndpoint: r.ModelEndpoint,
		Credentials:   map[string]string{credential: r.Key},
		Env:           cliEnv,
		Config:        map[string]string{locate.KeyEnginesDir: r.EnginesDir},
		Host:          replayHost{decide},
		Logger:        zap.NewNop(),
	}
}

// replayHost is the host of a replay: its gate is decide (nil allows every
// call), and it records nothing.
type replayHost struct {
	decide func(context.Context, engine.ToolCall) engine.Verdict
}

func (replayHost) Emit(event.Type, any) {}
func (h replayHost) Permit(ctx context.Context, c engine.ToolCall) engine.Verdict {
	if h.decide == nil {
		return engine.Verdict{Allow: true}
	}
	return h.decide(ctx, c)
}
func (replayHost) TakeSteers(string) []string { return nil }

// ReplayReply is what the replay found.
type ReplayReply struct {
	Engine string `json:"engine"`
	// Version is the CLI's version, when it started.
	Version string `json:"version,omitempty"`
	// OK: the protocol is the one recorded for Version.
	OK bool `json:"ok"`
	// Unknown: no replay exists for the engine.
	Unknown bool `json:"unknown,omitempty"`
	// NoGolden: nothing is recorded for Version; Error compares with the
	// nearest recorded version.
	NoGolden bool `json:"noGolden,omitempty"`
	// Error says what differed, or why the turn could not be played.
	Error string `json:"error,omitempty"`
}

// ServeReplay answers one ReplayRequest read from r with a ReplayReply
// written to w, replaying with replays[engine].
func ServeReplay(ctx context.Context, replays map[string]Replay, env []string, r io.Reader, w io.Writer) error {
	var req ReplayRequest
	dec := json.NewDecoder(io.LimitReader(r, maxReply))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return fmt.Errorf("replay request: %w", err)
	}
	reply := ReplayReply{Engine: req.Engine}
	replay, ok := replays[req.Engine]
	if !ok {
		reply.Unknown = true
		reply.Error = fmt.Sprintf("this runner cannot replay the %s engine's golden turn (it replays: %s)", req.Engine, strings.Join(slices.Sorted(maps.Keys(replays)), ", "))
	} else {
		version, err := replay(ctx, req, env)
		reply.Version, reply.OK = version, err == nil
		if err != nil {
			reply.Error = err.Error()
			reply.NoGolden = errors.Is(err, transcript.ErrNoGolden)
		}
	}
	return json.NewEncoder(w).Encode(reply)
}

// RunReplay starts runner as a replay of req.Engine's golden turn and
// returns its reply; env is the runner's whole environment. The runner is
// killed, with the CLI, when ctx ends first.
func RunReplay(ctx context.Context, runner string, env []string, req ReplayRequest) (ReplayReply, error) {
	var reply ReplayReply
	err := ask(ctx, runner, ReplayFlag, "golden replay", env, req, &reply)
	return reply, err
}
