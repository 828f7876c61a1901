package graph

import (
	"fmt"
	"slices"
)

// Policy says how a run's nodes are routed and bounded.
type Policy struct {
	// Engine and Model are the run's default: an engine name, "auto"
	// (the candidates in order, each behind a readiness probe, then self)
	// or "self". Default "auto".
	Engine string `json:"engine,omitempty" jsonschema:"default engine: script, claude, codex, copilot, a plugin's name, auto or self (default auto)"`
	Model  string `json:"model,omitempty" jsonschema:"default model: a model id or a tier (opus, sonnet, haiku, fast)"`
	// Candidates are tried in order by engine auto (default: claude,
	// codex, copilot).
	Candidates []Candidate `json:"candidates,omitempty" jsonschema:"engines engine auto tries in order"`
	// Stages overrides the default per stage.
	Stages map[Stage]StagePolicy `json:"stages,omitempty" jsonschema:"per-stage policy, keyed by stage: plan, setgoal, critique, implement, test, gate, gate:goal, report"`
	// Allocation "balanced" ranks auto candidates by stage preference,
	// work assigned and running, completions and errors.
	Allocation string `json:"allocation,omitempty" jsonschema:"empty, or balanced"`
	// MaxAttempts bounds the attempts per retry target (default 3).
	MaxAttempts int `json:"maxAttempts,omitempty" jsonschema:"attempts per subgoal, spec and report before a failure is final (default 3)"`
	// Isolated gives each subgoal a git worktree of its own.
	Isolated bool `json:"isolated,omitempty" jsonschema:"run each subgoal in a git worktree of its own"`
	// Merge, with Isolated, merges accepted subgoals' branches into the
	// run's worktree before the report runs.
	Merge bool `json:"merge,omitempty" jsonschema:"with isolated: merge accepted subgoals back before the report"`
	// ModelEndpoint, SpendCapUSD apply to every node's session unless its
	// stage says otherwise.
	ModelEndpoint string  `json:"modelEndpoint,omitempty" jsonschema:"base URL of the model API for every node"`
	SpendCapUSD   float64 `json:"spendCapUsd,omitempty" jsonschema:"spend cap of each node's session in US dollars"`
	// Models adds to the model catalog: engine → tier → model.
	Models map[string]map[string]string `json:"models,omitempty" jsonschema:"extra model tiers per engine: engine → tier → model id"`
}

// StagePolicy is one stage's routing and gate mode.
type StagePolicy struct {
	Engine     string      `json:"engine,omitempty" jsonschema:"engine name, auto or self"`
	Model      string      `json:"model,omitempty" jsonschema:"model id or tier"`
	Candidates []Candidate `json:"candidates,omitempty" jsonschema:"engines engine auto tries in order"`
	// Mode is the gate mode of the stage's sessions: review, auto or
	// readonly. Default: readonly for reasoning stages, auto for
	// implement and test.
	Mode string `json:"mode,omitempty" jsonschema:"gate mode: review, auto or readonly"`
	// Scenario is the script engine's scenario for this stage.
	Scenario      string  `json:"scenario,omitempty" jsonschema:"script engine: scenario file (absolute path)"`
	ModelEndpoint string  `json:"modelEndpoint,omitempty"`
	SpendCapUSD   float64 `json:"spendCapUsd,omitempty"`
	// Unattended overrides the default: sessions in review mode wait for
	// a person, the others never do.
	Unattended *bool `json:"unattended,omitempty"`
}

// Candidate is one engine (and model) engine auto may pick.
type Candidate struct {
	Engine string `json:"engine"`
	Model  string `json:"model,omitempty"`
}

// Engine names with a meaning of their own.
const (
	EngineAuto = "auto"
)

// AllocationBalanced ranks candidates by load and record.
const AllocationBalanced = "balanced"

// DefaultMaxAttempts bounds attempts when a policy does not.
const DefaultMaxAttempts = 3

// DefaultCandidates are what engine auto tries when nothing says.
var DefaultCandidates = []Candidate{{Engine: "claude"}, {Engine: "codex"}, {Engine: "copilot"}}

// Modes of a node's session (the gate modes).
var modes = []string{"review", "auto", "readonly"}

// Check validates a policy.
func (p Policy) Check() error {
	if p.MaxAttempts < 0 || p.MaxAttempts > 20 {
		return Errorf(CodeBadRequest, "policy: maxAttempts %d: want 1 to 20", p.MaxAttempts)
	}
	if p.Allocation != "" && p.Allocation != AllocationBalanced {
		return Errorf(CodeBadRequest, "policy: allocation %q: want empty or %q", p.Allocation, AllocationBalanced)
	}
	if p.SpendCapUSD < 0 {
		return Errorf(CodeBadRequest, "policy: spendCapUsd must be >= 0")
	}
	if err := checkEngine(p.Engine, p.Candidates); err != nil {
		return Errorf(CodeBadRequest, "policy: %v", err)
	}
	for st, sp := range p.Stages {
		if !slices.Contains(Stages, st) {
			return Errorf(CodeBadRequest, "policy: unknown stage %q (want one of %v)", st, Stages)
		}
		if sp.Mode != "" && !slices.Contains(modes, sp.Mode) {
			return Errorf(CodeBadRequest, "policy: stage %s: mode %q: want review, auto or readonly", st, sp.Mode)
		}
		if sp.SpendCapUSD < 0 {
			return Errorf(CodeBadRequest, "policy: stage %s: spendCapUsd must be >= 0", st)
		}
		if err := checkEngine(sp.Engine, sp.Candidates); err != nil {
			return Errorf(CodeBadRequest, "policy: stage %s: %v", st, err)
		}
	}
	return nil
}

func checkEngine(engine string, cands []Candidate) error {
	if engine == Self && len(cands) > 0 {
		return fmt.Errorf("engine self takes no candidates")
	}
	for _, c := range cands {
		if c.Engine == "" || c.Engine == EngineAuto || c.Engine == Self {
			return fmt.Errorf("candidate %q: want an engine name", c.Engine)
		}
	}
	return nil
}

// Attempts is the policy's attempt budget.
func (p Policy) Attempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

// Stage returns the effective policy of a stage: the stage's own fields,
// the run's defaults where it leaves them empty, and the default gate mode.
func (p Policy) Stage(st Stage) StagePolicy {
	sp := p.Stages[st]
	if sp.Engine == "" {
		sp.Engine = p.Engine
		if len(sp.Candidates) == 0 {
			sp.Candidates = p.Candidates
		}
	}
	if sp.Engine == "" {
		sp.Engine = EngineAuto
	}
	if sp.Model == "" {
		sp.Model = p.Model
	}
	if sp.Engine == EngineAuto && len(sp.Candidates) == 0 {
		sp.Candidates = DefaultCandidates
	}
	if sp.Mode == "" {
		sp.Mode = "auto"
		if st.Reasoning() {
			sp.Mode = "readonly"
		}
	}
	if sp.ModelEndpoint == "" {
		sp.ModelEndpoint = p.ModelEndpoint
	}
	if sp.SpendCapUSD == 0 {
		sp.SpendCapUSD = p.SpendCapUSD
	}
	return sp
}

// Explicit reports whether the stage names its engine itself, which wins
// over balanced allocation.
func (p Policy) Explicit(st Stage) bool {
	e := p.Stages[st].Engine
	return e != "" && e != EngineAuto
}

// UnattendedFor says whether a stage's sessions run unattended: as the
// policy says, else unless they run in review mode (a person reviews).
func (sp StagePolicy) UnattendedFor() bool {
	if sp.Unattended != nil {
		return *sp.Unattended
	}
	return sp.Mode != "review"
}
