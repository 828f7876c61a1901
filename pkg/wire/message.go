package wire

import (
	"encoding/json"
	"slices"
	"time"
)

// Type tags a Message.
type Type string

// Parent (supervisor) to child (runner).
const (
	THello          Type = "hello"            // Proto, TermFrames
	TLiveEnsure     Type = "live.ensure"      // ReqID, Spec: start or resume the session
	TInject         Type = "inject"           // ReqID, Command
	TLiveInterrupt  Type = "live.interrupt"   // ReqID: stop the running turn
	TApprovalResolv Type = "approval.resolve" // ReqID, AskID, Decision, Note
	TCap            Type = "cap"              // ReqID, Cap, Args
	TTermOpen       Type = "term.open"        // ReqID, Term
	TTermInput      Type = "term.input"       // Term (TermID, ClientID, Data)
	TTermResize     Type = "term.resize"      // Term (TermID, ClientID, Cols, Rows)
	TTermClose      Type = "term.close"       // Term (TermID, ClientID)
	TTermAck        Type = "term.ack"         // Term (TermID, ClientID, Acked): flow control
	TShutdown       Type = "shutdown"         // ReqID: flush, stop the engine, exit 0
)

// Child (runner) to parent (supervisor).
const (
	TReady       Type = "ready"       // Proto, Session, TermFrames
	TCapResult   Type = "capResult"   // ReqID, Result or Error
	TTermOpened  Type = "term.opened" // ReqID, Term (Role granted)
	TTermData    Type = "term.data"   // Term (TermID, ClientID, Data); a binary frame when asked
	TTermExit    Type = "term.exit"   // Term (TermID, ExitCode, Signal)
	TTermError   Type = "term.error"  // ReqID, Term, Error
	TMirror      Type = "mirror"      // Seq, Event: one canonical session event
	TRotate      Type = "rotate"      // Session (old), NewSession
	TLiveReady   Type = "live.ready"  // ReqID, Session, or Error
	TInjected    Type = "injected"    // ReqID, Outcome, Reply
	TInterrupted Type = "interrupted" // ReqID, Reply
	TBye         Type = "bye"         // ReqID of the shutdown: everything is flushed
)

// Outcome says what became of an inject.
type Outcome string

// Inject outcomes.
const (
	OutcomeInjected Outcome = "injected" // the command ran; Reply holds its answer
	OutcomeNotLive  Outcome = "notLive"  // the session has not been made live
	OutcomeNotReady Outcome = "notReady" // the session is starting; try again
	OutcomeFailed   Outcome = "failed"   // the command was refused; Reply.Error says why
)

// Message is one line of the supervisor <-> runner protocol. Only the fields
// its type documents are set; the rest are omitted on the wire.
type Message struct {
	T     Type   `json:"t"`
	ReqID string `json:"reqId,omitempty"`

	Proto int `json:"proto,omitempty"`
	// TermFrames, on hello, says the supervisor reads term.data as binary
	// frames (frame.go); on ready, that the runner will send them.
	TermFrames bool   `json:"termFrames,omitempty"`
	Session    string `json:"session,omitempty"`
	NewSession string `json:"newSession,omitempty"`

	Spec    *Spec    `json:"spec,omitempty"`
	Command *Command `json:"command,omitempty"`
	Outcome Outcome  `json:"outcome,omitempty"`
	Reply   *Reply   `json:"reply,omitempty"`

	AskID    string `json:"askId,omitempty"`
	Decision string `json:"decision,omitempty"`
	Note     string `json:"note,omitempty"`

	Cap    string          `json:"cap,omitempty"`
	Args   json.RawMessage `json:"args,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`

	// Seq and Event carry a mirrored event: Event is the exact line written
	// to events.jsonl, so it is forwarded to shells without re-encoding.
	Seq   int64           `json:"seq,omitempty"`
	Event json.RawMessage `json:"event,omitempty"`

	Term  *Term  `json:"term,omitempty"`
	Error *Error `json:"error,omitempty"`

	// Dir rides on live.ensure: the session folder. A runner started
	// without --session-dir (a spare, started before any session needed
	// it) takes the session in Dir; one started with it refuses another.
	Dir string `json:"dir,omitempty"`

	// Credentials rides on live.ensure only: the secrets the supervisor was
	// given, resolved for the runner's engine. It never goes to meta.json or
	// a log, so a message carrying it must not be logged.
	Credentials map[string]string `json:"credentials,omitempty"`
}

// Term carries the fields of the term.* messages.
type Term struct {
	TermID   string   `json:"termId"`
	ClientID string   `json:"clientId,omitempty"`
	Role     string   `json:"role,omitempty"` // "owner" or "read-only"
	Command  []string `json:"command,omitempty"`
	Cols     uint16   `json:"cols,omitempty"`
	Rows     uint16   `json:"rows,omitempty"`
	Data     []byte   `json:"data,omitempty"` // base64 on the wire
	ExitCode *int     `json:"exitCode,omitempty"`
	Signal   string   `json:"signal,omitempty"`

	// Window, on term.open, turns on flow control for the client: the
	// runner sends at most Window bytes of term.data beyond what the client
	// has acknowledged with term.ack, and holds the rest back. Zero means
	// no flow control.
	Window int64 `json:"window,omitempty"`
	// Acked, on term.ack, counts every byte of term.data the client has
	// taken since its term.opened.
	Acked int64 `json:"acked,omitempty"`
	// Export, on term.open, asks the runner to hand the terminal's master
	// over instead of sending its output: on the descriptor channel the
	// runner was started with (--term-fds), before the term.opened that
	// says Export was granted and carries the scrollback in Data. The
	// client then reads, types and resizes through the master itself, the
	// runner reports only the program's end (term.exit, term.error), and
	// the client's term.close carries in Data the scrollback the runner
	// keeps once it reads the output again. A runner without the channel,
	// or a terminal with other clients, attaches the client as usual.
	Export bool `json:"export,omitempty"`
}

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
	ID            string   `json:"id,omitempty"`
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
