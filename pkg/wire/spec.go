package wire

import (
	"slices"
	"time"
	"unicode"
	"unicode/utf8"
)

// BuiltinEngines names the engines built into every runner. Any other
// engine name, or a spec with a PluginPath, is a plugin engine, which only
// the plugin-runner build drives.
func BuiltinEngines() []string { return []string{"script", "claude", "codex", "copilot", "acp"} }

// NeedsPlugin reports whether the session runs on a plugin engine.
func (s Spec) NeedsPlugin() bool {
	return s.PluginPath != "" || !slices.Contains(BuiltinEngines(), s.Engine)
}

// Spec is how a session is configured when it is created. It is stored in
// the session folder's meta.json and sent with live.ensure.
type Spec struct {
	ID string `json:"id,omitempty"`
	// Title is what people call the session (the rename command); one
	// line of at most MaxTitle characters.
	Title         string   `json:"title,omitempty"`
	Engine        string   `json:"engine"`
	Cwd           string   `json:"cwd,omitempty"`
	Scenario      string   `json:"scenario,omitempty"`
	Model         string   `json:"model,omitempty"`
	ModelEndpoint string   `json:"modelEndpoint,omitempty"`
	Mode          string   `json:"mode,omitempty"`
	Allow         []string `json:"allow,omitempty"`
	AllowNetwork  bool     `json:"allowNetwork,omitempty"`
	Unattended    bool     `json:"unattended,omitempty"`
	SpendCapUSD   float64  `json:"spendCapUsd,omitempty"`
	Parent        string   `json:"parent,omitempty"`
	PluginPath    string   `json:"pluginPath,omitempty"`
	// EngineConfig is the engine's settings (GET /v1/engines lists each
	// engine's keys and types), with the supervisor's defaults for the
	// engine under them, written in when the session is created.
	EngineConfig EngineConfig `json:"engineConfig,omitempty"`
	// EngineSession is the engine's own conversation id, used to resume.
	EngineSession string `json:"engineSession,omitempty"`
	// Goal is the session's goal, checked at every turn end.
	Goal *Goal `json:"goal,omitempty"`
	// GoalLimit bounds goal-check turns in a row (default 20).
	GoalLimit int `json:"goalLimit,omitempty"`
	// CompactAt is the context fill, in percent, that triggers compaction
	// (default 95).
	CompactAt float64 `json:"compactAt,omitempty"`
	// Loop re-runs a prompt on a schedule; it needs Unattended and a
	// spend cap.
	Loop *Loop `json:"loop,omitempty"`
	// Workspace, when set, runs the session in a git worktree of its own
	// on a new branch of Cwd's repository (internal/workspace); the
	// supervisor then sets Cwd to the worktree.
	Workspace *Workspace `json:"workspace,omitempty"`
	// Agent shapes the session's agent: instructions added to its system
	// prompt, the tools it may use. An engine that cannot honour a part
	// of it refuses the session with bad_request (docs/engines.md).
	Agent *AgentPreset `json:"agent,omitempty"`
	// Placement says which node of a fleet the session may run on
	// (docs/fleet.md); only a supervisor in a fleet accepts it. It is
	// used to place the session and not kept in its meta.json.
	Placement *Placement `json:"placement,omitempty"`
}

// AgentPreset shapes a session's agent.
type AgentPreset struct {
	// Name labels the preset for people ("reviewer"); engines ignore it.
	Name string `json:"name,omitempty"`
	// Instructions are appended to the engine's own system prompt.
	Instructions string `json:"instructions,omitempty"`
	// Tools, when not empty, are the only tools the agent is offered, by
	// the engine's own tool names (Claude Code's Read, Bash...; Copilot's
	// view, bash...). Every call still passes the gate.
	Tools []string `json:"tools,omitempty"`
}

// Placement is what a new session asks of the fleet node it is placed on.
type Placement struct {
	// Node, when set, is the node the session must run on.
	Node string `json:"node,omitempty"`
	// Labels must all be on the node with these values (gpu=1, region=x).
	Labels map[string]string `json:"labels,omitempty"`
}

// Workspace asks for a session's own git worktree. Base, Branch and Keep
// come from the creator; the supervisor fills in the rest when it makes
// the worktree.
type Workspace struct {
	// Base is the branch or commit the new branch starts from (default
	// HEAD); a branch is also where a merge goes.
	Base string `json:"base,omitempty"`
	// Branch is the new branch's name (default corral/<random>).
	Branch string `json:"branch,omitempty"`
	// Keep leaves the worktree and branch in place when the session is
	// deleted.
	Keep bool `json:"keep,omitempty"`
	// Repo is the repository's top folder, BaseCommit the commit the
	// branch started at, Path the worktree (set by the supervisor).
	Repo       string `json:"repo,omitempty"`
	BaseCommit string `json:"baseCommit,omitempty"`
	Path       string `json:"path,omitempty"`
}

// Goal is what a session works towards.
type Goal struct {
	Text string `json:"text"`
	Done bool   `json:"done,omitempty"`
}

// Loop is a timed loop: Prompt every EveryMS milliseconds, Count times (0:
// no limit) or until Until (zero: no end).
type Loop struct {
	Prompt  string    `json:"prompt"`
	EveryMS int64     `json:"everyMs"`
	Count   int       `json:"count,omitempty"`
	Until   time.Time `json:"until,omitempty"`
}

// Check checks what both sides refuse in a spec, whoever wrote it: a
// client creating a session (the supervisor checks it first) or a
// meta.json the runner opens. It holds each field's own rules, so a field
// added to Spec brings its check here, not to either side.
func (s Spec) Check() error {
	if err := s.CheckLimits(); err != nil {
		return err
	}
	if err := CheckTitle(s.Title); err != nil {
		return err
	}
	return s.CheckLoop()
}

// MaxTitle bounds a session's title, in characters.
const MaxTitle = 120

// CheckTitle checks a session title: one line of at most MaxTitle
// characters, without control characters.
func CheckTitle(title string) error {
	if n := utf8.RuneCountInString(title); n > MaxTitle {
		return Errorf(CodeBadRequest, "a title has at most %d characters, not %d", MaxTitle, n)
	}
	for _, r := range title {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return Errorf(CodeBadRequest, "a title is one line of printable text (found %q)", r)
		}
	}
	return nil
}

// CheckLoop checks that a timed loop can never wait for a human or spend
// without bound: it needs a prompt, at most one run a second, Unattended,
// and a spend cap. A spec without a loop passes.
func (s Spec) CheckLoop() error {
	l := s.Loop
	switch {
	case l == nil:
		return nil
	case l.Prompt == "":
		return Errorf(CodeBadRequest, "a loop needs a prompt")
	case l.EveryMS < 1000:
		return Errorf(CodeBadRequest, "a loop runs at most once a second (everyMs >= 1000)")
	case !s.Unattended:
		return Errorf(CodeBadRequest, "a loop must be unattended: nobody waits on its asks")
	case s.SpendCapUSD <= 0:
		return Errorf(CodeBadRequest, "a loop needs a spend cap (spendCapUsd > 0)")
	}
	return nil
}
