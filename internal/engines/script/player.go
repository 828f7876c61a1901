package script

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// Named limits of the script engine's tools.
const (
	maxToolOutput = 64 << 10
	killGrace     = 2 * time.Second
)

// player plays one turn's steps. A "model call" ends at each tool call and
// at the end of the turn; each emits usage and context events.
type player struct {
	e    *Engine
	ctx  context.Context
	host engine.Host

	pendingIn  int64 // tokens the next model call reads beyond history
	pendingOut int64
	costUSD    float64
	text       strings.Builder
	lastText   string
	usage      event.UsageData
}

func (p *player) play(steps []Step) error {
	for _, st := range steps {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		var err error
		switch {
		case st.Say != "":
			err = p.say(st)
		case st.SleepMS > 0:
			err = sleep(p.ctx, time.Duration(st.SleepMS)*time.Millisecond)
		case st.Fail != nil:
			p.flushText()
			return &engine.Failure{Code: event.FailureCode(st.Fail.Code), Message: st.Fail.Message}
		case st.Tool != "":
			p.flushText()
			p.costUSD = st.CostUSD
			p.pendingOut += tokens(st.Path + st.Content + st.Command + st.URL + st.Old + st.New)
			p.endCall()
			err = p.tool(st)
		}
		if err != nil {
			if p.ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	p.flushText()
	return nil
}

func (p *player) say(st Step) error {
	chunks := split(st.Say, st.Chunks)
	for i, c := range chunks {
		if i > 0 {
			if err := sleep(p.ctx, time.Duration(st.DelayMS)*time.Millisecond); err != nil {
				return err
			}
		}
		p.host.Emit(event.AssistantDelta, event.TextData{Text: c})
		p.text.WriteString(c)
	}
	p.pendingOut += tokens(st.Say)
	return nil
}

// split cuts text into n pieces at word boundaries (n <= 0: one per word).
func split(text string, n int) []string {
	words := strings.SplitAfter(text, " ")
	if n <= 0 || n >= len(words) {
		return words
	}
	per := (len(words) + n - 1) / n
	var out []string
	for i := 0; i < len(words); i += per {
		end := min(i+per, len(words))
		out = append(out, strings.Join(words[i:end], ""))
	}
	return out
}

func (p *player) flushText() {
	if p.text.Len() == 0 {
		return
	}
	p.lastText = p.text.String()
	p.host.Emit(event.AssistantText, event.TextData{Text: p.lastText})
	p.text.Reset()
}

// endCall accounts one model call: it read the history plus what arrived
// since the last call, and wrote pendingOut.
func (p *player) endCall() {
	e := p.e
	if p.pendingIn == 0 && p.pendingOut == 0 {
		return
	}
	in := e.sc.SystemTokens + e.state.HistoryTokens + p.pendingIn
	u := e.price(in, p.pendingOut)
	if p.costUSD > 0 {
		u.CostUSD = p.costUSD
		p.costUSD = 0
	}
	e.state.HistoryTokens += p.pendingIn + p.pendingOut
	p.pendingIn, p.pendingOut = 0, 0
	p.usage.Add(u)
	p.usage.Model = u.Model
	p.host.Emit(event.Usage, u)
	used := in + u.OutputTokens
	p.host.Emit(event.Context, event.ContextData{UsedTokens: used, WindowTokens: e.sc.ContextWindow,
		Percent: 100 * float64(used) / float64(e.sc.ContextWindow)})
}

func (p *player) abs(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(p.e.opts.Cwd, path)
}

func (p *player) tool(st Step) error {
	p.e.mu.Lock()
	p.e.toolNo++
	id := "tool-" + strconv.Itoa(p.e.toolNo)
	p.e.mu.Unlock()
	call, err := p.call(id, st)
	if err != nil {
		return err
	}
	started := event.ToolStartedData{ToolID: id, Tool: call.Tool, Kind: string(call.Kind), Summary: summary(st),
		Command: call.Command, Path: st.Path, URL: call.URL}
	p.host.Emit(event.ToolStarted, started)
	begin := time.Now()
	fin := event.ToolFinishedData{ToolID: id, Tool: call.Tool}

	var v engine.Verdict
	if p.e.toolOffered(call.Tool) {
		v = p.host.Permit(p.ctx, call)
	}
	switch {
	case !p.e.toolOffered(call.Tool):
		fin.Outcome, fin.Message = "error", "No such tool available: "+call.Tool+" (not among the session's tools)"
	case p.ctx.Err() != nil:
		fin.Outcome = "stopped"
	case !v.Allow:
		fin.Outcome, fin.Message = "denied", v.Message
		if v.Applied {
			fin.Outcome = "partial"
		}
	default:
		out, code, runErr := p.run(st, call)
		fin.Output = out
		fin.ExitCode = code
		switch {
		case p.ctx.Err() != nil:
			fin.Outcome = "stopped"
		case runErr != nil:
			fin.Outcome, fin.Message = "error", runErr.Error()
		case code != nil && *code != 0:
			fin.Outcome = "error"
		default:
			fin.Outcome = "ok"
		}
	}
	fin.DurationMS = time.Since(begin).Milliseconds()
	p.host.Emit(event.ToolFinished, fin)
	p.pendingIn += tokens(fin.Output + fin.Message)
	if p.ctx.Err() != nil {
		return nil
	}
	for _, s := range p.host.TakeSteers(id) {
		p.pendingIn += tokens(s)
		tmpl := p.e.sc.OnSteer
		if tmpl == "" {
			tmpl = "Understood: {steer}"
		}
		p.text.WriteString(strings.ReplaceAll(tmpl, "{steer}", s))
		p.host.Emit(event.AssistantDelta, event.TextData{Text: p.text.String()})
		p.flushText()
	}
	return nil
}

func summary(st Step) string {
	switch st.Tool {
	case "shell":
		return st.Command
	case "fetch":
		return "Fetch " + st.URL
	default:
		return strings.ToUpper(st.Tool[:1]) + st.Tool[1:] + " " + st.Path
	}
}

// call describes a step as a tool call for the gate and hunk review.
func (p *player) call(id string, st Step) (engine.ToolCall, error) {
	c := engine.ToolCall{ID: id}
	switch st.Tool {
	case "shell":
		c.Tool, c.Kind, c.Command = "Bash", engine.KindShell, st.Command
	case "fetch":
		c.Tool, c.Kind, c.URL = "WebFetch", engine.KindFetch, st.URL
	case "read":
		c.Tool, c.Kind, c.Path = "Read", engine.KindRead, p.abs(st.Path)
	case "write", "edit", "delete":
		path := p.abs(st.Path)
		before, err := os.ReadFile(path)
		existed := err == nil
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			before = nil
		}
		prop := &engine.EditProposal{Path: path, Before: before, Existed: existed}
		switch st.Tool {
		case "write":
			c.Tool, prop.After = "Write", []byte(st.Content)
		case "delete":
			c.Tool, prop.Delete = "Delete", true
		case "edit":
			c.Tool = "Edit"
			if !existed || !bytes.Contains(before, []byte(st.Old)) {
				// The model's edit does not fit the file; the
				// tool fails as a real engine's would.
				prop.After = before
			} else {
				prop.After = bytes.Replace(before, []byte(st.Old), []byte(st.New), 1)
			}
		}
		c.Kind, c.Path, c.Edit = engine.KindEdit, path, prop
	}
	return c, nil
}

// run executes an allowed tool call.
func (p *player) run(st Step, call engine.ToolCall) (string, *int, error) {
	switch st.Tool {
	case "shell":
		return p.shell(st.Command)
	case "read":
		data, err := os.ReadFile(call.Path)
		return clipOutput(data), nil, err
	case "fetch":
		return p.fetch(st.URL)
	case "delete":
		// Like every write of Corral's own, inside the worktree and
		// through no link: the path may have changed since it was judged.
		err := atomicfile.RemoveBeneath(p.e.opts.Cwd, call.Path)
		return "", nil, err
	case "edit":
		if call.Edit == nil || !call.Edit.Existed || !bytes.Contains(call.Edit.Before, []byte(st.Old)) {
			return "", nil, fmt.Errorf("old text not found in %s", st.Path)
		}
		fallthrough
	default: // write
		return "", nil, atomicfile.WriteBeneath(p.e.opts.Cwd, call.Path, call.Edit.After, 0o644, false)
	}
}

func (p *player) shell(command string) (string, *int, error) {
	// The gate judges commands as bash parses them, so bash runs them.
	shell, err := exec.LookPath("bash")
	if err != nil {
		shell = "/bin/sh"
	}
	cmd := exec.Command(shell, "-c", command)
	cmd.Dir = p.e.opts.Cwd
	cmd.Env = p.e.opts.Env
	var out limitedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	proc.Configure(cmd)
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-p.ctx.Done():
		proc.StopGroup(cmd, done, killGrace)
	}
	code, _ := proc.ExitStatus(waitErr)
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return out.String(), nil, waitErr
	}
	return out.String(), &code, nil
}

func clipOutput(b []byte) string {
	if len(b) > maxToolOutput {
		b = b[:maxToolOutput]
	}
	return string(b)
}

// limitedBuffer keeps the first maxToolOutput bytes of a command's output.
type limitedBuffer struct{ bytes.Buffer }

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if room := maxToolOutput - l.Len(); room > 0 {
		if len(p) > room {
			l.Buffer.Write(p[:room])
		} else {
			l.Buffer.Write(p)
		}
	}
	return len(p), nil
}
