package claude

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// judgeTimeout bounds a side query when the caller's context does not.
const judgeTimeout = 5 * time.Minute

// Judge answers a side question in a separate, short-lived `claude -p`
// process. It sees the conversation (a fork of it, never stored:
// --no-session-persistence) but has no tools, and the conversation itself
// is untouched.
func (e *Engine) Judge(ctx context.Context, prompt string) (string, event.UsageData, error) {
	if !e.ops.TryLock() {
		return "", event.UsageData{}, fmt.Errorf("claude engine: cannot judge while a turn runs: %w", wire.ErrConflict)
	}
	defer e.ops.Unlock()
	e.mu.Lock()
	if err := e.unusableLocked(); err != nil {
		e.mu.Unlock()
		return "", event.UsageData{}, err
	}
	args := []string{"-p", "--output-format", "stream-json", "--verbose", "--tools", "", "--no-session-persistence"}
	if e.persisted {
		from := e.convID
		if e.forkFrom != "" {
			from = e.forkFrom
		}
		args = append(args, "--resume", from, "--fork-session")
	}
	if e.opts.Model != "" {
		args = append(args, "--model", e.opts.Model)
	}
	spec := launchSpec{bin: e.bin, args: args, dir: e.opts.Cwd, env: e.env, key: e.key}
	model := e.model
	e.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, judgeTimeout)
	defer cancel()
	r, stderr, err := runPrint(ctx, spec, prompt)
	if err != nil {
		return "", event.UsageData{}, &engine.Failure{Code: event.FailEngineError, Message: "claude side query failed", Stderr: stderr, Err: err}
	}
	usage := resultUsage(*r, model)
	usage.CostUSD = sinceLastCost(*r)
	switch {
	case isAuthError(r.APIErrorStatus, ""):
		return "", usage, &engine.Failure{Code: event.FailSignInExpired, Message: signInMessage, Stderr: stderr}
	case r.IsError || r.Subtype != "success":
		return "", usage, resultFailure(*r, "", stderr)
	}
	return r.Result, usage, nil
}

// runPrint runs a one-shot `claude -p` with prompt on stdin and returns its
// result frame. A rejected key ends it at the first retry.
func runPrint(ctx context.Context, spec launchSpec, prompt string) (*resultFrame, []string, error) {
	cmd := exec.CommandContext(ctx, spec.bin, spec.args...)
	cmd.Dir, cmd.Env = spec.dir, spec.env
	proc.ConfigureContext(cmd, 2*time.Second)
	cmd.Stdin = strings.NewReader(prompt)
	started, err := keyPipe(cmd, spec.key)
	if err != nil {
		return nil, nil, err
	}
	defer started()
	tail := proc.NewTail(stderrLines)
	cmd.Stderr = tail
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start %s: %w", spec.bin, err)
	}
	var result *resultFrame
	var readErr error
	lines := newFrameReader(stdout)
	for {
		f, err := lines.next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
				proc.KillGroup(cmd.Process.Pid)
			}
			break
		}
		switch f.Type {
		case typeResult:
			r, err := f.result()
			if err != nil {
				readErr = err
				break
			}
			result = &r
		case typeSystem:
			if f.Subtype != "api_retry" {
				continue
			}
			if s, err := f.system(); err == nil && isAuthError(s.ErrorStatus, s.Error) {
				status := 401
				result = &resultFrame{Subtype: "success", IsError: true, APIErrorStatus: &status}
				proc.KillGroup(cmd.Process.Pid)
			}
		}
	}
	waitErr := cmd.Wait()
	// The CLI's group may hold a straggler; nothing of it is wanted now.
	proc.KillGroup(cmd.Process.Pid)
	switch {
	case readErr != nil:
		return nil, tail.Lines(), readErr
	case result != nil:
		return result, tail.Lines(), nil
	case ctx.Err() != nil:
		return nil, tail.Lines(), ctx.Err()
	case waitErr != nil:
		return nil, tail.Lines(), fmt.Errorf("claude -p ended without a result: %w", waitErr)
	}
	return nil, tail.Lines(), errors.New("claude -p ended without a result")
}
