package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
)

// Terminal bounds.
const (
	// defaultOutputLimit is a terminal's output kept when the agent sets
	// no limit; maxOutputLimit bounds what it may ask for.
	defaultOutputLimit = 1 << 20
	maxOutputLimit     = 16 << 20
	// maxTerminals bounds the terminals one session keeps at once.
	maxTerminals = 64
	// killWait bounds the wait for a killed command's exit.
	killWait = 5 * time.Second
)

// terminals are the commands the agent runs through terminal/create.
type terminals struct {
	mu    sync.Mutex
	byID  map[string]*terminal
	count int
}

func newTerminals() *terminals { return &terminals{byID: map[string]*terminal{}} }

// terminal is one command, its output (the last limit bytes) and its exit.
type terminal struct {
	id  string
	cmd *exec.Cmd
	// onExit runs once the command has exited, before done is closed.
	onExit func(*terminal)

	mu        sync.Mutex
	out       []byte
	limit     int
	truncated bool

	done   chan struct{} // closed once the command has exited
	status exitStatus
}

// Write keeps the last limit bytes of output, cut on a character boundary.
func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.out = append(t.out, p...)
	if over := len(t.out) - t.limit; over > 0 {
		for over < len(t.out) && !utf8.RuneStart(t.out[over]) {
			over++
		}
		t.out = append(t.out[:0], t.out[over:]...)
		t.truncated = true
	}
	return len(p), nil
}

func (t *terminal) output() terminalOutputResult {
	t.mu.Lock()
	res := terminalOutputResult{Output: string(t.out), Truncated: t.truncated}
	t.mu.Unlock()
	select {
	case <-t.done:
		st := t.status
		res.ExitStatus = &st
	default:
	}
	return res
}

// kill ends the command's process group and waits (bounded) for its exit.
func (t *terminal) kill() {
	select {
	case <-t.done:
		return
	default:
	}
	proc.KillGroup(t.cmd.Process.Pid)
	select {
	case <-t.done:
	case <-time.After(killWait):
	}
}

// killAll kills every terminal and forgets them.
func (ts *terminals) killAll() {
	ts.mu.Lock()
	all := ts.byID
	ts.byID = map[string]*terminal{}
	ts.mu.Unlock()
	for _, t := range all {
		t.kill()
	}
}

func (ts *terminals) get(id string) (*terminal, error) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	t := ts.byID[id]
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "no terminal " + id}
	}
	return t, nil
}

// shellLine is the command line the gate judges: the command itself when
// it comes without arguments (agents send a whole shell line so), else the
// command and its arguments quoted for a shell.
func shellLine(command string, args []string) string {
	if len(args) == 0 {
		return command
	}
	parts := []string{shellQuote(command)}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '=' || r == ':' || r == ',' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// onTerminalCreate runs a command for the agent once the gate allows it
// (or a permission request already did): a command without arguments runs
// as a bash script, one with arguments directly; in its own process group,
// in the worktree unless told otherwise, with the session's environment.
func (e *Engine) onTerminalCreate(ctx context.Context, a *agent, params json.RawMessage) (any, error) {
	var p createTerminalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalid(rTerminalCreate, err)
	}
	if strings.TrimSpace(p.Command) == "" {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "terminal/create needs a command"}
	}
	cwd := e.opts.Cwd
	if p.Cwd != nil && *p.Cwd != "" {
		var err error
		if cwd, err = absPath(rTerminalCreate, *p.Cwd); err != nil {
			return nil, err
		}
	}
	line := shellLine(p.Command, p.Args)
	ef, err := e.beginEffect(ctx, a, p.SessionID, line, "execute", "execute")
	if err != nil {
		return nil, err
	}
	defer ef.done()
	e.mu.Lock()
	approved := ef.t.consumeApprovalLocked("exec\x00" + line)
	e.mu.Unlock()
	if !approved {
		call := engine.ToolCall{ID: ef.tc.id, Tool: ef.tc.toolName(), Kind: engine.KindShell, Command: line, Input: params}
		if cwd != e.opts.Cwd {
			// The gate judges commands as run in the worktree.
			call.Command = "cd " + shellQuote(cwd) + " && " + line
		}
		v := e.host.Permit(ef.ctx, call)
		if !v.Allow {
			e.refuse(ef, v)
			return nil, refused(v, "run "+line)
		}
	}
	limit := defaultOutputLimit
	if p.OutputByteLimit != nil && *p.OutputByteLimit > 0 {
		limit = int(min(*p.OutputByteLimit, maxOutputLimit))
	}
	tc := ef.tc
	t, err := e.terms.start(e.command(p, cwd), limit, func(t *terminal) {
		code := t.status.ExitCode
		e.mu.Lock()
		tc.exitCode = code
		e.mu.Unlock()
		outcome := "ok"
		if code == nil || *code != 0 {
			outcome = "error"
		}
		e.finish(ef, outcome, t.output().Output)
	})
	if err != nil {
		e.finish(ef, "error", err.Error())
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	}
	return createTerminalResult{TerminalID: t.id}, nil
}

// command builds the exec.Cmd of a terminal.
func (e *Engine) command(p createTerminalParams, cwd string) *exec.Cmd {
	var cmd *exec.Cmd
	if len(p.Args) == 0 {
		shell, err := exec.LookPath("bash")
		if err != nil {
			shell = "/bin/sh"
		}
		cmd = exec.Command(shell, "-c", p.Command)
	} else {
		cmd = exec.Command(p.Command, p.Args...)
	}
	cmd.Dir = cwd
	env := append([]string(nil), e.opts.Env...)
	for _, v := range p.Env {
		if v.Name != "" && !strings.Contains(v.Name, "=") && !proc.IsCredentialVar(v.Name) {
			env = withEnv(env, v.Name+"="+v.Value)
		}
	}
	cmd.Env = env
	return cmd
}

// start runs cmd as a new terminal.
func (ts *terminals) start(cmd *exec.Cmd, limit int, onExit func(*terminal)) (*terminal, error) {
	ts.mu.Lock()
	if len(ts.byID) >= maxTerminals {
		ts.mu.Unlock()
		return nil, fmt.Errorf("the session already has %d terminals; release some first", maxTerminals)
	}
	ts.count++
	t := &terminal{id: fmt.Sprintf("term-%d", ts.count), cmd: cmd, limit: limit, onExit: onExit, done: make(chan struct{})}
	ts.byID[t.id] = t
	ts.mu.Unlock()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		ts.forget(t.id)
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, t, t
	proc.Configure(cmd)
	// A background job the command leaves holding its output must not
	// keep the terminal from exiting.
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	devnull.Close()
	if err != nil {
		ts.forget(t.id)
		return nil, fmt.Errorf("start %s: %w", filepath.Base(cmd.Path), err)
	}
	go func() {
		err := cmd.Wait()
		// Whatever the command left in its group goes with it.
		proc.KillGroup(cmd.Process.Pid)
		code, sig := proc.ExitStatus(err)
		if sig != "" {
			t.status.Signal = &sig
		} else {
			t.status.ExitCode = &code
		}
		// onExit records the exit on the tool call before done lets a
		// wait_for_exit answer: the agent reports the call completed
		// once that answer reaches it, and the call's toolFinished must
		// carry the exit code by then.
		t.onExit(t)
		close(t.done)
	}()
	return t, nil
}

func (ts *terminals) forget(id string) {
	ts.mu.Lock()
	delete(ts.byID, id)
	ts.mu.Unlock()
}

// onTerminal serves terminal/output, wait_for_exit, kill and release.
func (e *Engine) onTerminal(ctx context.Context, a *agent, method string, params json.RawMessage) (any, error) {
	var p terminalParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalid(method, err)
	}
	e.mu.Lock()
	ours := e.agent == a && p.SessionID == e.sessionID
	e.mu.Unlock()
	if !ours {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "not this session's terminal"}
	}
	t, err := e.terms.get(p.TerminalID)
	if err != nil {
		return nil, err
	}
	switch method {
	case rTerminalOutput:
		return t.output(), nil
	case rTerminalWait:
		select {
		case <-t.done:
			return t.status, nil
		case <-ctx.Done():
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the session ended"}
		}
	case rTerminalKill:
		t.kill()
		return empty{}, nil
	default: // release
		t.kill()
		e.terms.forget(t.id)
		return empty{}, nil
	}
}
