package wire

import "encoding/json"

// Type is a message's kind: the "t" of its line.
type Type string

// Parent (supervisor) to child (runner).
const (
	THello      Type = "hello"       // Hello: the handshake
	TLiveEnsure Type = "live.ensure" // LiveEnsure: start or resume the session
	TCommand    Type = "command"     // Command: run a control command
	TTermOpen   Type = "term.open"   // TermOpen: attach a client to a terminal
	TTermInput  Type = "term.input"  // TermInput: keystrokes
	TTermResize Type = "term.resize" // TermResize: a new size
	TTermClose  Type = "term.close"  // TermClose: detach a client
	TTermAck    Type = "term.ack"    // TermAck: flow control
	TShutdown   Type = "shutdown"    // Shutdown: flush, stop the engine, exit 0
	TPrewarm    Type = "prewarm"     // Prewarm: start a spare's engine for the session expected next
)

// Child (runner) to parent (supervisor).
const (
	TReady        Type = "ready"        // Ready: answers hello
	TLiveReady    Type = "live.ready"   // LiveReady: answers live.ensure
	TCommandReply Type = "commandReply" // CommandReply: answers command
	TTermOpened   Type = "term.opened"  // TermOpened: answers term.open
	TBye          Type = "bye"          // Bye: answers shutdown; everything is flushed
	TMirror       Type = "mirror"       // Mirror: one session event, as events.jsonl holds it
	TState        Type = "state"        // StateReport: what the session is doing, at every change
	TTermData     Type = "term.data"    // TermData: terminal output; a binary frame when asked
	TTermExit     Type = "term.exit"    // TermExit: the terminal's program ended
	TTermError    Type = "term.error"   // TermError: a refused input, or the end of a client's stream
	TPrewarmed    Type = "prewarmed"    // Prewarmed: answers prewarm
)

// Message is one protocol message: one of the types of this file. On the
// wire it is one JSON object whose "t" is Type() (and, for a request or a
// reply, whose "reqId" ties the two), the other fields being the message
// type's own.
type Message interface {
	Type() Type
}

// Request is a message its receiver answers with exactly one message of
// type R, carrying the request's reqId.
type Request[R Message] interface {
	Message
	answeredBy(R)
}

// TermMessage is a message about one client of a terminal, or about every
// client of it when the client id is empty.
type TermMessage interface {
	Message
	Terminal() (termID, clientID string)
}

// Hello opens the link: the supervisor's protocol version. Hello and Ready
// keep this shape in every version of the protocol, so that a mismatch is
// always reported as one.
type Hello struct {
	Proto int `json:"proto"`
	// TermFrames says the supervisor reads term.data as binary frames
	// (frame.go).
	TermFrames bool `json:"termFrames,omitempty"`
	// MirrorFrom is set by a supervisor re-attaching to a runner that
	// outlived its previous one (docs/wire.md, *Re-attaching*): the
	// runner first mirrors the events of its log from this seq on, up to
	// the last it has written, then every new one, so the new
	// supervisor misses none and gets none twice.
	MirrorFrom int64 `json:"mirrorFrom,omitempty"`
}

// Ready answers Hello: the runner's version, the session it holds (empty
// for a spare), and whether it will send term.data as binary frames. Error
// is set when the runner refuses the handshake.
type Ready struct {
	Proto      int    `json:"proto"`
	Session    string `json:"session,omitempty"`
	TermFrames bool   `json:"termFrames,omitempty"`
	Error      *Error `json:"error,omitempty"`
}

// LiveEnsure makes the session live: the runner opens its log, starts or
// resumes the engine and emits sessionStarted or sessionResumed.
type LiveEnsure struct {
	// Spec is the session's configuration, as in its meta.json.
	Spec Spec `json:"spec"`
	// Dir is the session folder. A runner started without --session-dir
	// (a spare, started before any session needed it) takes the session
	// in Dir; one started with it refuses another.
	Dir string `json:"dir,omitempty"`
	// Credentials are the secrets the supervisor was given, resolved for
	// the runner's engine. They never go to meta.json or a log, so a
	// LiveEnsure must not be logged.
	Credentials map[string]string `json:"credentials,omitempty"`
}

// LiveReady answers LiveEnsure: the session id, or why it cannot start.
type LiveReady struct {
	Session string `json:"session,omitempty"`
	Error   *Error `json:"error,omitempty"`
}

// Prewarm asks a spare runner, which holds no session, to start the engine
// of the session the supervisor expects next, ahead of it: the engine's
// process is started and initialized for Spec's shape (engine, cwd, model,
// endpoint, engine settings, agent preset) in the session folder Dir,
// which the supervisor reserved for that session. A later LiveEnsure for
// Dir hands the session the warm engine when the engine finds the session
// of the same shape and given the same Credentials; otherwise the engine
// starts cold (docs/engines.md, "Prewarmed engines").
type Prewarm struct {
	Spec Spec   `json:"spec"`
	Dir  string `json:"dir"`
	// Credentials are what the session's LiveEnsure would carry; like
	// LiveEnsure's, they never go to a file or a log.
	Credentials map[string]string `json:"credentials,omitempty"`
}

// Prewarmed answers Prewarm: Error says why no engine was started (an
// engine that cannot be started ahead answers bad_request).
type Prewarmed struct {
	Error *Error `json:"error,omitempty"`
}

// Command runs one control command (docs/commands.md) in the session:
// the one road into the runner's command handler. The link carries the
// command as its JSON object, exactly as control.sock and the HTTP API
// take it; package command holds the typed commands and their results.
type Command struct {
	Command json.RawMessage `json:"command"`
}

// Outcome says whether a command ran.
type Outcome string

// Command outcomes.
const (
	OutcomeRan      Outcome = "ran"      // the command ran; Reply says how it went
	OutcomeNotLive  Outcome = "notLive"  // the session has not been made live: ensure it, then retry
	OutcomeNotReady Outcome = "notReady" // the session is starting: retry shortly
)

// CommandReply answers Command. Reply is the command's answer, exactly
// what control.sock answers, when Outcome is ran.
type CommandReply struct {
	Outcome Outcome `json:"outcome"`
	Reply   *Reply  `json:"reply,omitempty"`
}

// TermOpen attaches a client to a terminal of the session, starting the
// terminal when it is not running.
type TermOpen struct {
	TermID   string   `json:"termId"`
	ClientID string   `json:"clientId"`
	Role     string   `json:"role,omitempty"` // "owner" (default) or "read-only"
	Command  []string `json:"command,omitempty"`
	Cols     uint16   `json:"cols,omitempty"`
	Rows     uint16   `json:"rows,omitempty"`
	// Window turns on flow control: the runner sends at most Window bytes
	// of term.data beyond what the client has acknowledged (TermAck).
	// Zero means no flow control.
	Window int64 `json:"window,omitempty"`
	// Export asks the runner to hand the terminal's master over instead
	// of sending its output, on the descriptor channel it was started with
	// (--term-fds), before the TermOpened that says so.
	Export bool `json:"export,omitempty"`
}

// TermOpened answers TermOpen: the role granted and the size, or Error
// when the terminal could not be opened. For an export, Export is set and
// Data holds the scrollback.
type TermOpened struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId"`
	Role     string `json:"role,omitempty"`
	Cols     uint16 `json:"cols,omitempty"`
	Rows     uint16 `json:"rows,omitempty"`
	Data     []byte `json:"data,omitempty"` // base64 on the wire
	Export   bool   `json:"export,omitempty"`
	Error    *Error `json:"error,omitempty"`
}

// TermInput is keystrokes for a terminal, from its owner.
type TermInput struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId"`
	Data     []byte `json:"data"`
}

// TermResize gives a terminal a new size.
type TermResize struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId"`
	Cols     uint16 `json:"cols"`
	Rows     uint16 `json:"rows"`
}

// TermClose detaches a client. Ending an export, Data carries the
// scrollback the runner keeps from then on.
type TermClose struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId"`
	Data     []byte `json:"data,omitempty"`
}

// TermAck acknowledges output under flow control: Acked counts every byte
// of term.data the client has taken since its TermOpened.
type TermAck struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId"`
	Acked    int64  `json:"acked"`
}

// TermData is a terminal's output for one client, or for every client of
// the terminal when ClientID is empty. It travels as a binary frame
// (frame.go), which the supervisor always asks for; as a JSON line, read by
// the general decoder, only where a frame cannot carry it or to a peer
// that did not ask (docs/wire.md).
type TermData struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId,omitempty"`
	Data     []byte `json:"data,omitempty"`
}

// TermExit says a terminal's program ended (for every client of the
// terminal when ClientID is empty).
type TermExit struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId,omitempty"`
	ExitCode *int   `json:"exitCode,omitempty"`
	Signal   string `json:"signal,omitempty"`
}

// TermError refuses a client's input or resize, or ends its stream (a
// client too slow to keep up may open again).
type TermError struct {
	TermID   string `json:"termId"`
	ClientID string `json:"clientId,omitempty"`
	Error    *Error `json:"error"`
}

// Shutdown asks the runner to flush and fsync its log, stop the engine,
// answer Bye and exit 0.
type Shutdown struct{}

// Bye answers Shutdown: everything is flushed.
type Bye struct{}

// Mirror is one session event, sent after it reached events.jsonl: Event
// is the exact line of the file, so the supervisor forwards it to shells
// without re-encoding it. Its encoder and fast decoder are in mirror.go.
type Mirror struct {
	Seq   int64           `json:"seq"`
	Event json.RawMessage `json:"event"`
}

// StateReport is the runner's account of what its session is doing: sent
// when the session becomes live and whenever any of it changes, before
// the reply to the command that changed it. The supervisor decides from it
// whether a runner may be stopped for idleness or to make room.
type StateReport struct {
	State State `json:"state"`
	// Turn is the number of the running or last turn.
	Turn int `json:"turn"`
	// Queued counts the messages waiting for a turn.
	Queued int `json:"queued"`
	// OpenAsks counts the asks waiting for a person's answer.
	OpenAsks int `json:"openAsks"`
	// PendingEdits counts the edits with hunks waiting for review.
	PendingEdits int `json:"pendingEdits"`
	// Settling says a turn has ended and the runner is still finishing it
	// (a goal check, compaction), which may queue the next turn.
	Settling bool `json:"settling,omitempty"`
	// Held says the session's spend cap is reached: no turn starts, and
	// queued messages wait, until the cap is raised past what was spent.
	Held bool `json:"held,omitempty"`
}

// Busy reports whether the session has anything under way or waiting for
// a person: a runner that is busy must not be stopped.
func (s StateReport) Busy() bool {
	switch s.State {
	case StateIdle, StateStopped, StateFailed:
	default:
		return true
	}
	return s.Settling || s.Queued > 0 || s.OpenAsks > 0 || s.PendingEdits > 0
}

// WaitsForPerson reports whether nothing but a person holds the session up:
// its turn waits on an ask or a review, or no turn runs and open asks or
// pending hunks wait for a person's word, or messages wait in a queue the
// spend cap holds (Held) until a person raises the cap or clears the
// queue. Such a session's runner does nothing until then. Queued messages
// the cap does not hold are a turn about to start: they do not count.
func (s StateReport) WaitsForPerson() bool {
	switch s.State {
	case StateWaitingForApproval, StateWaitingForReview:
		return true
	case StateIdle, StateStopped, StateFailed:
		if s.Settling {
			return false
		}
		if s.Held && s.Queued > 0 {
			return true
		}
		return s.Queued == 0 && (s.OpenAsks > 0 || s.PendingEdits > 0)
	}
	return false
}

// State is a session's coarse state, as a status bar shows it.
type State string

// Session states.
const (
	StateStarting           State = "starting"
	StateIdle               State = "idle"
	StateWorking            State = "working"
	StateWaitingForApproval State = "waitingForApproval"
	StateWaitingForReview   State = "waitingForReview"
	StateFailed             State = "failed"
	StateStopped            State = "stopped"
	// StateStorageFailed: the session's event log cannot be written (a
	// full disk); every command but status is refused with
	// storage_unavailable until the storage takes writes again.
	StateStorageFailed State = "storageFailed"
)

func (Hello) Type() Type        { return THello }
func (Ready) Type() Type        { return TReady }
func (LiveEnsure) Type() Type   { return TLiveEnsure }
func (LiveReady) Type() Type    { return TLiveReady }
func (Command) Type() Type      { return TCommand }
func (CommandReply) Type() Type { return TCommandReply }
func (TermOpen) Type() Type     { return TTermOpen }
func (TermOpened) Type() Type   { return TTermOpened }
func (TermInput) Type() Type    { return TTermInput }
func (TermResize) Type() Type   { return TTermResize }
func (TermClose) Type() Type    { return TTermClose }
func (TermAck) Type() Type      { return TTermAck }
func (TermData) Type() Type     { return TTermData }
func (TermExit) Type() Type     { return TTermExit }
func (TermError) Type() Type    { return TTermError }
func (Shutdown) Type() Type     { return TShutdown }
func (Bye) Type() Type          { return TBye }
func (Mirror) Type() Type       { return TMirror }
func (StateReport) Type() Type  { return TState }
func (Prewarm) Type() Type      { return TPrewarm }
func (Prewarmed) Type() Type    { return TPrewarmed }

func (LiveEnsure) answeredBy(*LiveReady) {}
func (Command) answeredBy(*CommandReply) {}
func (TermOpen) answeredBy(*TermOpened)  {}
func (Shutdown) answeredBy(*Bye)         {}
func (Prewarm) answeredBy(*Prewarmed)    {}

func (m TermOpen) Terminal() (string, string)   { return m.TermID, m.ClientID }
func (m TermOpened) Terminal() (string, string) { return m.TermID, m.ClientID }
func (m TermInput) Terminal() (string, string)  { return m.TermID, m.ClientID }
func (m TermResize) Terminal() (string, string) { return m.TermID, m.ClientID }
func (m TermClose) Terminal() (string, string)  { return m.TermID, m.ClientID }
func (m TermAck) Terminal() (string, string)    { return m.TermID, m.ClientID }
func (m TermData) Terminal() (string, string)   { return m.TermID, m.ClientID }
func (m TermExit) Terminal() (string, string)   { return m.TermID, m.ClientID }
func (m TermError) Terminal() (string, string)  { return m.TermID, m.ClientID }

// messages makes an empty message of each type, for the decoder.
var messages = map[Type]func() Message{
	THello:        func() Message { return new(Hello) },
	TReady:        func() Message { return new(Ready) },
	TLiveEnsure:   func() Message { return new(LiveEnsure) },
	TLiveReady:    func() Message { return new(LiveReady) },
	TCommand:      func() Message { return new(Command) },
	TCommandReply: func() Message { return new(CommandReply) },
	TTermOpen:     func() Message { return new(TermOpen) },
	TTermOpened:   func() Message { return new(TermOpened) },
	TTermInput:    func() Message { return new(TermInput) },
	TTermResize:   func() Message { return new(TermResize) },
	TTermClose:    func() Message { return new(TermClose) },
	TTermAck:      func() Message { return new(TermAck) },
	TTermData:     func() Message { return new(TermData) },
	TTermExit:     func() Message { return new(TermExit) },
	TTermError:    func() Message { return new(TermError) },
	TShutdown:     func() Message { return new(Shutdown) },
	TBye:          func() Message { return new(Bye) },
	TMirror:       func() Message { return new(Mirror) },
	TState:        func() Message { return new(StateReport) },
	TPrewarm:      func() Message { return new(Prewarm) },
	TPrewarmed:    func() Message { return new(Prewarmed) },
}

// replies maps each request's type to its reply's; Request[R] says the
// same to the compiler, and a test holds the two together.
var replies = map[Type]Type{
	TLiveEnsure: TLiveReady,
	TCommand:    TCommandReply,
	TTermOpen:   TTermOpened,
	TShutdown:   TBye,
	TPrewarm:    TPrewarmed,
}

// ReplyType returns the type of the message that answers a request of
// type t, and false for a type that is no request.
func ReplyType(t Type) (Type, bool) {
	r, ok := replies[t]
	return r, ok
}

// CarriesReqID reports whether a message of type t carries a reqId: a
// request, or the reply to one.
func CarriesReqID(t Type) bool {
	if _, ok := replies[t]; ok {
		return true
	}
	for _, r := range replies {
		if r == t {
			return true
		}
	}
	return false
}

// Types lists every message type with an empty message of it, for
// documentation and schema generators.
func Types() map[Type]Message {
	out := make(map[Type]Message, len(messages))
	for t, mk := range messages {
		out[t] = mk()
	}
	return out
}
