package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/pkg/engine"
)

// maxFileBytes bounds a file Corral reads for the agent, or reads to stage
// an edit of.
const maxFileBytes = 32 << 20

// effect is one of the agent's requests that acts on the world, tied to
// the tool call it carries out, or to a call Corral names itself (synth)
// when no tool call announced it: Corral then finishes that call too.
type effect struct {
	t     *turnState
	tc    *toolCall
	synth bool
	done  func()
	ctx   context.Context
}

// beginEffect finds the running turn and the tool call behind a request,
// and the context its Permit runs under. It fails when no turn runs.
func (e *Engine) beginEffect(ctx context.Context, a *agent, sessionID, key, kind string, kinds ...string) (*effect, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	t := e.activeTurnLocked(a, sessionID)
	if t == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "no Corral turn is running for this session"}
	}
	tc := t.find(e.opts.Cwd, key, kinds...)
	synth := tc == nil
	if synth {
		// A request no tool call announced: Corral names it itself.
		e.seq++
		tc = t.tool(fmt.Sprintf("acp-%s-%d", kind, e.seq))
		tc.kind, tc.title, tc.name = kind, key, kind
		raw, _ := json.Marshal(map[string]string{"command": key})
		if kind != "execute" {
			raw, _ = json.Marshal(map[string]string{"path": key})
		}
		tc.rawInput = raw
	}
	e.startToolLocked(t, tc)
	pctx, done := permitContext(ctx, t)
	return &effect{t: t, tc: tc, synth: synth, ctx: pctx, done: done}, nil
}

// finish ends the call Corral named itself for an effect; the agent's own
// tool calls finish with their updates.
func (e *Engine) finish(ef *effect, outcome, output string) {
	if !ef.synth {
		return
	}
	e.mu.Lock()
	e.finishToolLocked(ef.t, ef.tc, outcome, output)
	e.mu.Unlock()
}

// refuse records a refused effect on its tool call.
func (e *Engine) refuse(ef *effect, v engine.Verdict) {
	e.mu.Lock()
	ef.tc.denied, ef.tc.message = true, v.Message
	ef.t.refused = ef.tc.toolName() + " (" + v.Message + ")"
	e.mu.Unlock()
	e.finish(ef, "denied", "")
}

// absPath checks that p is an absolute path, as ACP requires, and cleans it.
func absPath(method, p string) (string, error) {
	if p == "" || !filepath.IsAbs(p) {
		return "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s needs an absolute path, not %q", method, p)}
	}
	return filepath.Clean(p), nil
}

// onReadTextFile reads a file for the agent, once the gate allows the read.
func (e *Engine) onReadTextFile(ctx context.Context, a *agent, params json.RawMessage) (any, error) {
	var p readTextFileParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalid(rReadTextFile, err)
	}
	path, err := absPath(rReadTextFile, p.Path)
	if err != nil {
		return nil, err
	}
	// An edit tool reads its file before it writes it.
	ef, err := e.beginEffect(ctx, a, p.SessionID, path, "read", "read", "search", "edit")
	if err != nil {
		return nil, err
	}
	defer ef.done()
	e.mu.Lock()
	approved := ef.t.consumeApprovalLocked("read\x00" + path)
	e.mu.Unlock()
	if !approved {
		v := e.host.Permit(ef.ctx, engine.ToolCall{ID: ef.tc.id, Tool: ef.tc.toolName(), Kind: engine.KindRead, Path: path, Input: params})
		if !v.Allow {
			e.refuse(ef, v)
			return nil, refused(v, "read "+path)
		}
	}
	data, existed, err := readFile(path)
	switch {
	case err != nil:
		e.finish(ef, "error", err.Error())
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
	case !existed:
		e.finish(ef, "error", "no such file")
		return nil, &jsonrpc.Error{Code: codeResourceNotFound, Message: "Resource not found: " + path}
	}
	e.finish(ef, "ok", "")
	return readTextFileResult{Content: lines(string(data), p.Line, p.Limit)}, nil
}

// onWriteTextFile writes a file for the agent, once the whole change has
// passed the gate and hunk review. A change the reviewer accepted only in
// part is applied by the runner itself, and the agent is told so.
func (e *Engine) onWriteTextFile(ctx context.Context, a *agent, params json.RawMessage) (any, error) {
	var p writeTextFileParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, invalid(rWriteTextFile, err)
	}
	path, err := absPath(rWriteTextFile, p.Path)
	if err != nil {
		return nil, err
	}
	before, existed, err := readFile(path)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Corral could not read the file to stage the edit: " + err.Error()}
	}
	ef, err := e.beginEffect(ctx, a, p.SessionID, path, "edit", "edit")
	if err != nil {
		return nil, err
	}
	defer ef.done()
	edit := engine.EditProposal{Path: path, Before: before, Existed: existed, After: []byte(p.Content)}
	input, _ := json.Marshal(map[string]string{"path": path, "content": clip(p.Content, maxOutput)})
	v := e.host.Permit(ef.ctx, engine.ToolCall{ID: ef.tc.id, Tool: ef.tc.toolName(), Kind: engine.KindEdit, Path: path, Edit: &edit, Input: input})
	if !v.Allow {
		e.refuse(ef, v)
		return nil, refused(v, "write "+path)
	}
	if err := writeFile(path, edit.After); err != nil {
		e.finish(ef, "error", err.Error())
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Corral could not write the file: " + err.Error()}
	}
	e.finish(ef, "ok", "")
	return empty{}, nil
}

// readFile reads a regular file of at most maxFileBytes; a missing file is
// (nil, false, nil).
func readFile(path string) ([]byte, bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, true, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, true, err
	}
	if len(data) > maxFileBytes {
		return nil, true, fmt.Errorf("%s is larger than %d bytes", path, maxFileBytes)
	}
	return data, true, nil
}

// writeFile replaces path with data (atomically), keeping its mode, and
// creates its folder if need be.
func writeFile(path string, data []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.Write(path, data, mode)
}

// lines returns limit lines of s from line (1-based), as fs/read_text_file
// asks; nil means from the start, to the end.
func lines(s string, line, limit *int) string {
	if line == nil && limit == nil {
		return s
	}
	start := 0
	if line != nil && *line > 1 {
		for n := 1; n < *line; n++ {
			i := strings.IndexByte(s[start:], '\n')
			if i < 0 {
				return ""
			}
			start += i + 1
		}
	}
	end := len(s)
	if limit != nil && *limit >= 0 {
		pos := start
		for n := 0; n < *limit; n++ {
			i := strings.IndexByte(s[pos:], '\n')
			if i < 0 {
				pos = len(s)
				break
			}
			pos += i + 1
		}
		end = pos
	}
	return s[start:end]
}
