package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
)

// EngineCheckTTL is how long the answer of an engine probe is kept: a shell
// opening its "new session" dialog again soon after does not run every CLI
// again.
const EngineCheckTTL = time.Minute

// EnginesOptions ask GET /v1/engines for more than the kept answer.
type EnginesOptions struct {
	// Refresh probes again even when a kept answer is fresh.
	Refresh bool
	// Accept also tries each credential against ModelEndpoint (or each
	// engine's default endpoint): network traffic, so only when asked.
	Accept        bool
	ModelEndpoint string
}

// engineChecks keeps the last probe's answer for each way of asking. The
// key covers the credentials (by digest) and the settings, so a credential
// set or removed is seen at the next call.
type engineChecks struct {
	mu    sync.Mutex // held while a probe runs: callers wait for one answer
	kept  map[string]keptProbe
	now   func() time.Time
	probe func(ctx context.Context, req engineprobe.Request) (engineprobe.Reply, error)
}

type keptProbe struct {
	at    time.Time
	reply engineprobe.Reply
}

// Engines describes the built-in engines and whether sessions on each
// could start with the supervisor's settings and credentials, as a runner
// probe finds them (internal/engineprobe).
func (m *Manager) Engines(ctx context.Context, opts EnginesOptions) (api.EnginesReply, error) {
	all := catalog.Engines()
	req := engineprobe.Request{
		Config:        map[string]map[string]string{},
		Credentials:   map[string]map[string]string{},
		ModelEndpoint: opts.ModelEndpoint,
		Accept:        opts.Accept,
	}
	present := map[string]map[string]bool{}
	readErr := map[string]error{}
	for _, e := range all {
		req.Engines = append(req.Engines, e.Name)
		req.Config[e.Name] = m.engineConfig(e.Name)
		secrets := map[string]string{}
		if m.cfg.Credentials != nil && len(e.Credentials) > 0 {
			var err error
			secrets, err = m.cfg.Credentials.Pick(e.Credentials)
			if err != nil {
				readErr[e.Name] = err
			}
		}
		req.Credentials[e.Name] = secrets
		present[e.Name] = map[string]bool{}
		for item := range secrets {
			present[e.Name][item] = true
		}
	}
	reply, at, err := m.checks.get(ctx, req, opts.Refresh)
	if err != nil {
		return api.EnginesReply{}, err
	}
	out := api.EnginesReply{OK: true, CheckedAt: at, Engines: make([]api.Engine, 0, len(all))}
	for _, e := range all {
		res, ok := reply.Engines[e.Name]
		if !ok {
			res = engine.ProbeResult{Checks: []api.EngineCheck{engineprobe.Failed(engine.CheckCLI, "the probe runner did not answer for %s", e.Name)}}
		}
		if err := readErr[e.Name]; err != nil {
			res.Checks = slices.DeleteFunc(res.Checks, func(c api.EngineCheck) bool { return c.Name == engine.CheckCredentials })
			res.Checks = append(res.Checks, engineprobe.Failed(engine.CheckCredentials, "%v", err))
		}
		info := api.Engine{
			Name: e.Name, Summary: e.Summary, CLI: res.CLI, Checks: res.Checks,
			Models: e.Models, Settings: e.Settings, Ready: res.Ready(), Defaults: m.cfg.EngineDefaults[e.Name],
			Credentials: make([]api.EngineCredential, 0, len(e.Credentials)),
		}
		if info.Models == nil {
			info.Models = []api.EngineModel{}
		}
		if info.Settings == nil {
			info.Settings = []api.EngineSetting{}
		}
		if failed, ok := res.Failed(); ok {
			info.Reason = failed.Detail
		}
		for _, item := range e.Credentials {
			info.Credentials = append(info.Credentials, api.EngineCredential{Item: item, Set: present[e.Name][item]})
		}
		out.Engines = append(out.Engines, info)
	}
	return out, nil
}

// engineConfig is the configuration a session on engine gets from the
// supervisor and its runner (the shared cache folder), as a probe should
// see it.
func (m *Manager) engineConfig(name string) map[string]string {
	config := map[string]string{catalog.KeyCacheDir: filepath.Join(m.cfg.StateDir, "cache")}
	maps.Copy(config, m.cfg.EngineDefaults[name].Strings())
	return config
}

// newEngineChecks probes through the runner at runner, with the
// environment runners get.
func newEngineChecks(cfg Config) *engineChecks {
	env := append(proc.BaseEnv(), cfg.Env...)
	return &engineChecks{
		kept: map[string]keptProbe{},
		now:  cfg.Now,
		probe: func(ctx context.Context, req engineprobe.Request) (engineprobe.Reply, error) {
			return engineprobe.Run(ctx, cfg.RunnerPath, env, req)
		},
	}
}

// get returns the kept answer to req when it is fresh, else probes.
func (c *engineChecks) get(ctx context.Context, req engineprobe.Request, refresh bool) (engineprobe.Reply, time.Time, error) {
	key := requestKey(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if k, ok := c.kept[key]; ok && !refresh && c.now().Sub(k.at) < EngineCheckTTL {
		return k.reply, k.at, nil
	}
	// The probe runs every engine's checks at once, each within
	// engineprobe.PerEngine; a little more bounds the whole.
	ctx, cancel := context.WithTimeout(ctx, engineprobe.PerEngine+10*time.Second)
	defer cancel()
	reply, err := c.probe(ctx, req)
	if err != nil {
		return engineprobe.Reply{}, time.Time{}, wire.Errorf(wire.CodeUnavailable, "%v", err)
	}
	at := c.now().UTC()
	for k, v := range c.kept {
		if c.now().Sub(v.at) >= EngineCheckTTL {
			delete(c.kept, k)
		}
	}
	c.kept[key] = keptProbe{at: at, reply: reply}
	return reply, at, nil
}

// requestKey names a request by a digest: it holds secrets, which are
// kept in no map key.
func requestKey(req engineprobe.Request) string {
	raw, _ := json.Marshal(req) // maps and strings: nothing fails
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
