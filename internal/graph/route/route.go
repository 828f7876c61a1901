// Package route decides which engine runs a graph node: the stage's policy
// when it names an engine, else (engine auto) the first candidate whose
// readiness probe passes (probes cached per engine and model for a short
// while), ranked by load and record with allocation balanced, else self:
// the caller runs the node and submits its result. Model tiers (opus,
// sonnet, …) resolve against the models each engine declares; an
// undeclared tier falls back to the engine's default and the routing
// reason says so.
package route

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/graph"
)

// Prober checks that an engine can run a node now: its CLI is there, the
// credentials work, the model answers.
type Prober interface {
	Probe(ctx context.Context, t Target) error
}

// Target is what a probe checks: an engine, a model, and the model
// endpoint the node's session would use.
type Target struct {
	Engine, Model, Endpoint string
}

// DefaultTTL is how long a probe's answer is reused.
const DefaultTTL = 2 * time.Minute

// Router routes nodes. It is safe for concurrent use.
type Router struct {
	prober Prober
	ttl    time.Duration
	now    func() time.Time

	mu     sync.Mutex
	cache  map[probeKey]probeAnswer
	flight map[probeKey]chan struct{}
}

type probeKey = Target

type probeAnswer struct {
	ready  bool
	detail string
	at     time.Time
}

// New returns a router that probes with p (nil: every engine is taken as
// ready) and keeps answers for ttl (0: DefaultTTL).
func New(p Prober, ttl time.Duration, now func() time.Time) *Router {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	if now == nil {
		now = time.Now
	}
	return &Router{prober: p, ttl: ttl, now: now, cache: map[probeKey]probeAnswer{}, flight: map[probeKey]chan struct{}{}}
}

// Route decides how node n of run r runs, probing candidates as needed.
func (rt *Router) Route(ctx context.Context, r *graph.Run, n *graph.Node) *graph.Route {
	return rt.route(ctx, r, n, true)
}

// Preview is how n would be routed now, from cached probes only: it does
// no I/O, for graph_next.
func (rt *Router) Preview(r *graph.Run, n *graph.Node) *graph.Route {
	return rt.route(context.Background(), r, n, false)
}

func (rt *Router) route(ctx context.Context, r *graph.Run, n *graph.Node, probe bool) *graph.Route {
	sp := r.Policy.Stage(n.Stage)
	out := &graph.Route{Mode: sp.Mode, Scenario: sp.Scenario, At: rt.now().UTC()}
	source := "run policy"
	if r.Policy.Stages[n.Stage].Engine != "" {
		source = "stage policy " + string(n.Stage)
	}
	switch sp.Engine {
	case graph.Self:
		out.Engine = graph.Self
		out.Reason = source + ": engine self (the caller runs the node and submits its result)"
		return out
	case graph.EngineAuto:
	default:
		out.Engine = sp.Engine
		model, note := Resolve(r.Policy.Models, sp.Engine, sp.Model)
		out.Model = model
		out.Reason = fmt.Sprintf("%s: engine %s", source, sp.Engine) + note
		return out
	}
	cands := make([]graph.Candidate, 0, len(sp.Candidates))
	for _, c := range sp.Candidates {
		if c.Model == "" {
			c.Model = sp.Model
		}
		cands = append(cands, c)
	}
	order := "in order"
	if r.Policy.Allocation == graph.AllocationBalanced {
		cands = Rank(cands, Load(r))
		order = "ranked by balanced allocation"
	}
	var seen []string
	for _, c := range cands {
		model, note := Resolve(r.Policy.Models, c.Engine, c.Model)
		p := rt.probe(ctx, Target{c.Engine, model, sp.ModelEndpoint}, probe)
		out.Probes = append(out.Probes, p)
		if p.Ready {
			out.Engine, out.Model = c.Engine, model
			why := "probe passed"
			if p.Cached {
				why = "probe passed (cached)"
			}
			if !probe && p.Detail == notProbed {
				why = "to be probed when it runs"
			}
			out.Reason = fmt.Sprintf("%s: engine auto, candidates %s: %s %s", source, order, c.Engine, why) + note
			if len(seen) > 0 {
				out.Reason += "; not ready: " + strings.Join(seen, "; ")
			}
			return out
		}
		seen = append(seen, c.Engine+": "+p.Detail)
	}
	out.Engine = graph.Self
	out.Reason = fmt.Sprintf("%s: engine auto, no candidate ready (%s): falling back to self", source, strings.Join(seen, "; "))
	return out
}

const notProbed = "not probed yet"

// probe answers whether engine+model is ready, from the cache when fresh;
// without live, an uncached candidate is taken as ready (to be probed when
// the node runs).
func (rt *Router) probe(ctx context.Context, k Target, live bool) graph.Probe {
	p := graph.Probe{Engine: k.Engine, Model: k.Model}
	if rt.prober == nil || k.Engine == "script" {
		p.Ready, p.Detail = true, "built in"
		if rt.prober == nil && k.Engine != "script" {
			p.Detail = "no prober: taken as ready"
		}
		return p
	}
	for {
		rt.mu.Lock()
		if a, ok := rt.cache[k]; ok && rt.now().Sub(a.at) < rt.ttl {
			rt.mu.Unlock()
			p.Ready, p.Detail, p.Cached = a.ready, a.detail, true
			return p
		}
		if !live {
			rt.mu.Unlock()
			p.Ready, p.Detail = true, notProbed
			return p
		}
		if wait, busy := rt.flight[k]; busy {
			rt.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				p.Detail = "probe abandoned: " + ctx.Err().Error()
				return p
			}
		}
		done := make(chan struct{})
		rt.flight[k] = done
		rt.mu.Unlock()
		err := rt.prober.Probe(ctx, k)
		a := probeAnswer{ready: err == nil, detail: "ready", at: rt.now()}
		if err != nil {
			a.detail = oneLine(err.Error())
		}
		rt.mu.Lock()
		delete(rt.flight, k)
		if ctx.Err() == nil {
			rt.cache[k] = a
		}
		rt.mu.Unlock()
		close(done)
		p.Ready, p.Detail = a.ready, a.detail
		return p
	}
}

// Stats is one engine's work in a run.
type Stats struct {
	Assigned, Running, Completed, Errors int
}

// Load counts each engine's work in a run from its nodes' routes.
func Load(r *graph.Run) map[string]Stats {
	out := map[string]Stats{}
	for _, n := range r.Nodes {
		if n.Route == nil || n.Route.Engine == graph.Self {
			continue
		}
		s := out[n.Route.Engine]
		s.Assigned++
		switch {
		case n.State == graph.StateRunning:
			s.Running++
		case n.State == graph.StateFailed:
			s.Errors++
		case n.State.Finished():
			s.Completed++
		}
		out[n.Route.Engine] = s
	}
	return out
}

// Rank orders candidates for balanced allocation by a score that is lower
// the better: 4 × the stage's preference (its place in the list) + 3 ×
// running + 1 × assigned + 2 × errors − 2 × completed; ties keep the
// stage's order. The ranking is deterministic: the same run gives the
// same order.
func Rank(cands []graph.Candidate, load map[string]Stats) []graph.Candidate {
	type scored struct {
		c     graph.Candidate
		pref  int
		score int
	}
	s := make([]scored, len(cands))
	for i, c := range cands {
		st := load[c.Engine]
		s[i] = scored{c, i, 4*i + 3*st.Running + st.Assigned + 2*st.Errors - 2*st.Completed}
	}
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].score != s[j].score {
			return s[i].score < s[j].score
		}
		return s[i].pref < s[j].pref
	})
	out := make([]graph.Candidate, len(s))
	for i := range s {
		out[i] = s[i].c
	}
	return out
}

// Tiers are the model tiers a policy may name instead of a model id.
var Tiers = []string{"opus", "sonnet", "haiku", "best", "fast"}

// Catalog is what each engine declares: tier → model id; "default" is the
// model used when a tier is not declared ("" leaves it to the engine).
var Catalog = map[string]map[string]string{
	"claude":  {"opus": "claude-opus-5-5", "sonnet": "claude-sonnet-5-5", "haiku": "claude-haiku-4-5", "best": "claude-opus-5-5", "fast": "claude-haiku-4-5", "default": ""},
	"codex":   {"best": "gpt-5.5", "fast": "gpt-5-mini", "default": "gpt-5.5"},
	"copilot": {"best": "gpt-5", "fast": "gpt-5-mini", "sonnet": "claude-sonnet-4", "opus": "claude-opus-4.5", "default": ""},
	"script":  {"default": "script-1"},
}

// Resolve turns a model or tier into the model id to run, with a note for
// the routing reason when a tier resolved or fell back. extra (a run's
// policy) adds to the catalog.
func Resolve(extra map[string]map[string]string, engine, model string) (string, string) {
	if !slices.Contains(Tiers, model) {
		return model, ""
	}
	declared := func(tier string) (string, bool) {
		if m, ok := extra[engine][tier]; ok {
			return m, true
		}
		m, ok := Catalog[engine][tier]
		return m, ok
	}
	if id, ok := declared(model); ok {
		return id, fmt.Sprintf("; tier %s → %s", model, id)
	}
	def, _ := declared("default")
	shown := def
	if shown == "" {
		shown = "its own default model"
	}
	return def, fmt.Sprintf("; tier %s is not declared by %s: using %s instead", model, engine, shown)
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
