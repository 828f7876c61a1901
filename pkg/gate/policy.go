package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Mode is how a session treats edits and commands.
type Mode string

const (
	// ModeReview stages edits for review; unknown commands are asked.
	ModeReview Mode = "review"
	// ModeAuto applies edits at once (they stay reviewable); unknown
	// commands are asked.
	ModeAuto Mode = "auto"
	// ModeReadonly allows no edits and no command that is known to write;
	// other unknown commands are asked.
	ModeReadonly Mode = "readonly"
)

func (m Mode) valid() bool {
	switch m {
	case "", ModeReview, ModeAuto, ModeReadonly:
		return true
	}
	return false
}

// ProjectSettingsFile is where a project keeps its settings, relative to
// the worktree. The gate reads the "gate" object in it.
const ProjectSettingsFile = ".corral/settings.json"

// maxSettingsBytes bounds how much of a settings file is read, so a
// hostile repository cannot make loading a policy slow or huge.
const maxSettingsBytes = 1 << 20

// Policy is what the gate allows. Its JSON form is the "gate" object of
// .corral/settings.json and a session's settings; see docs/gate.md.
type Policy struct {
	// Mode is review (the default), auto or readonly.
	Mode Mode `json:"mode,omitempty"`

	// Allow lists shell word patterns, such as "git status|diff|log *",
	// whose matching simple commands run without asking. A pattern never
	// lets through what other rules ask or deny: network access, writes
	// outside the worktree or to sensitive paths, substitutions, and
	// commands that run other commands.
	Allow []string `json:"allow,omitempty"`

	// Deny lists shell word patterns whose matching simple commands are
	// denied outright. It narrows; it is not a security boundary, since
	// the same program can be reached by other spellings.
	Deny []string `json:"deny,omitempty"`

	// AllowNetwork lets shell commands that reach the network be judged
	// like any other command (they still need an Allow pattern), and lets
	// web fetches reach any host. Only the session may set it.
	AllowNetwork bool `json:"allowNetwork,omitempty"`

	// WebHosts lists hosts a web fetch may reach without asking: an exact
	// host name ("pkg.go.dev") or a "*." wildcard for its subdomains
	// ("*.example.com"). Only the session may set it.
	WebHosts []string `json:"webHosts,omitempty"`

	// MCPTools lists "server/tool" patterns, "*" matching any run of
	// characters within a side, for MCP tool calls allowed without asking.
	// Only the session may set it.
	MCPTools []string `json:"mcpTools,omitempty"`

	// ReadRoots lists extra directories, absolute or starting with "~/",
	// that may be read without asking. Credential files inside them are
	// still asked. Only the session may set it.
	ReadRoots []string `json:"readRoots,omitempty"`

	// Unattended marks a session no human watches: every ask becomes a
	// refusal (see [Judgement.Action]). Only the session may set it.
	Unattended bool `json:"unattended,omitempty"`
}

// DefaultPolicy returns the built-in layer: review mode and an allowlist
// of commands that only read.
func DefaultPolicy() Policy {
	return Policy{Mode: ModeReview, Allow: defaultAllow()}
}

func defaultAllow() []string {
	return []string{
		"ls *", "pwd", "cat *", "head *", "tail *", "wc *",
		"grep|egrep|fgrep *", "rg *", "find *", "tree *", "stat *", "file *",
		"du *", "df *", "echo *", "printf *", "true", "false", "test *", "[ *",
		"which *", "type *", "basename *", "dirname *", "realpath *", "readlink *",
		"sort *", "uniq *", "cut *", "tr *", "diff *", "cmp *", "comm *",
		"column *", "nl *", "tac *", "rev *", "od *", "hexdump *",
		"md5sum|sha1sum|sha256sum|sha512sum|shasum *", "base64 *", "jq *",
		"seq *", "date", "uname *", "whoami", "id", "sleep *", "nproc", "sed *",
		"git status|diff|log|show|blame|grep|shortlog|describe|rev-parse|rev-list *",
		"git ls-files|ls-tree|cat-file|merge-base|show-ref|for-each-ref|check-ignore *",
		"git branch|tag|remote|stash|config|reflog|worktree|version *",
		"go version|env|list|doc|vet *",
	}
}

func (p Policy) clone() Policy {
	p.Allow = slices.Clone(p.Allow)
	p.Deny = slices.Clone(p.Deny)
	p.WebHosts = slices.Clone(p.WebHosts)
	p.MCPTools = slices.Clone(p.MCPTools)
	p.ReadRoots = slices.Clone(p.ReadRoots)
	return p
}

// Layer names a policy layer, for errors.
type Layer string

const (
	LayerProject Layer = "project"
	LayerSession Layer = "session"
)

// ErrWidening is wrapped by the error a project settings file gets when
// it tries to set something only the session may set.
var ErrWidening = errors.New("only the session's own settings may set this")

// PolicyError is a problem with one field of one policy layer.
type PolicyError struct {
	Layer  Layer
	Source string // file the layer came from, if any
	Field  string // JSON field name
	Err    error
}

func (e *PolicyError) Error() string {
	var b strings.Builder
	if e.Layer != "" {
		b.WriteString(string(e.Layer))
		b.WriteByte(' ')
	}
	b.WriteString("policy")
	if e.Source != "" {
		fmt.Fprintf(&b, " (%s)", e.Source)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *PolicyError) Unwrap() error { return e.Err }

// DecodePolicy reads one policy object in its JSON form. Unknown fields
// are errors, so a misspelt setting is not silently ignored.
func DecodePolicy(r io.Reader) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(io.LimitReader(r, maxSettingsBytes))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("decode policy: %w", err)
	}
	if dec.More() {
		return Policy{}, errors.New("decode policy: trailing data after the policy object")
	}
	return p, nil
}

// Validate checks every field of p: the mode, and the syntax of patterns,
// hosts and read roots.
func (p Policy) Validate() error {
	return p.validate("")
}

func (p Policy) validate(layer Layer) error {
	fail := func(field string, err error) error {
		return &PolicyError{Layer: layer, Field: field, Err: err}
	}
	if !p.Mode.valid() {
		return fail("mode", fmt.Errorf("unknown mode %q (want review, auto or readonly)", p.Mode))
	}
	for _, s := range p.Allow {
		if _, err := compileAllowPattern(s); err != nil {
			return fail("allow", err)
		}
	}
	for _, s := range p.Deny {
		if _, err := compilePattern(s); err != nil {
			return fail("deny", err)
		}
	}
	for _, h := range p.WebHosts {
		if err := validHostPattern(h); err != nil {
			return fail("webHosts", err)
		}
	}
	for _, t := range p.MCPTools {
		if err := validMCPPattern(t); err != nil {
			return fail("mcpTools", err)
		}
	}
	for _, r := range p.ReadRoots {
		if !filepath.IsAbs(r) && !strings.HasPrefix(r, "~/") && r != "~" {
			return fail("readRoots", fmt.Errorf("%q is neither absolute nor under ~/", r))
		}
	}
	return nil
}

// LoadPolicy assembles the policy for a session in worktree from three
// layers, later overriding earlier: [DefaultPolicy], the "gate" object of
// the worktree's [ProjectSettingsFile] (if present), and session (may be
// nil). Patterns of all layers add up; the mode is the last one set.
//
// A project settings file comes with the repository, so it may only
// narrow the gate or add allow patterns: setting allowNetwork, webHosts,
// mcpTools, readRoots, unattended or mode "auto" there is an error
// wrapping [ErrWidening] rather than being silently applied or dropped.
// The agent CLIs' own allow rules are never read.
func LoadPolicy(worktree string, session *Policy) (Policy, error) {
	p := DefaultPolicy()
	project, found, err := readProjectPolicy(worktree)
	if err != nil {
		return Policy{}, err
	}
	if found {
		p = merge(p, project)
	}
	if session != nil {
		if err := session.validate(LayerSession); err != nil {
			return Policy{}, err
		}
		p = merge(p, *session)
		p.AllowNetwork = p.AllowNetwork || session.AllowNetwork
		p.Unattended = p.Unattended || session.Unattended
		p.WebHosts = appendNew(p.WebHosts, session.WebHosts)
		p.MCPTools = appendNew(p.MCPTools, session.MCPTools)
		p.ReadRoots = appendNew(p.ReadRoots, session.ReadRoots)
	}
	return p, nil
}

// merge applies the fields every layer may set.
func merge(base, over Policy) Policy {
	if over.Mode != "" {
		base.Mode = over.Mode
	}
	base.Allow = appendNew(base.Allow, over.Allow)
	base.Deny = appendNew(base.Deny, over.Deny)
	return base
}

func appendNew(dst, src []string) []string {
	out := slices.Clip(dst)
	for _, s := range src {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// readProjectPolicy reads and checks the project layer. found is false
// when there is no settings file or it has no "gate" object.
func readProjectPolicy(worktree string) (p Policy, found bool, err error) {
	path := filepath.Join(worktree, filepath.FromSlash(ProjectSettingsFile))
	fail := func(field string, err error) (Policy, bool, error) {
		return Policy{}, false, &PolicyError{Layer: LayerProject, Source: ProjectSettingsFile, Field: field, Err: err}
	}
	data, err := readSettingsFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Policy{}, false, nil
	}
	if err != nil {
		return fail("", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fail("", fmt.Errorf("parse: %w", err))
	}
	raw, ok := top["gate"]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Policy{}, false, nil
	}
	p, err = DecodePolicy(bytes.NewReader(raw))
	if err != nil {
		return fail("gate", err)
	}
	if err := p.validate(LayerProject); err != nil {
		var pe *PolicyError
		if errors.As(err, &pe) {
			pe.Source = ProjectSettingsFile
			pe.Field = "gate." + pe.Field
		}
		return Policy{}, false, err
	}
	widening := []struct {
		field string
		set   bool
	}{
		{"allowNetwork", p.AllowNetwork},
		{"webHosts", len(p.WebHosts) > 0},
		{"mcpTools", len(p.MCPTools) > 0},
		{"readRoots", len(p.ReadRoots) > 0},
		{"unattended", p.Unattended},
		{"mode", p.Mode == ModeAuto},
	}
	for _, w := range widening {
		if w.set {
			return fail("gate."+w.field, ErrWidening)
		}
	}
	return p, true, nil
}

// readSettingsFile reads a regular file of bounded size. A settings path
// that is a FIFO or device would otherwise block or never end; opening
// without blocking lets the check below refuse it.
func readSettingsFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", info.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxSettingsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	if len(data) > maxSettingsBytes {
		return nil, fmt.Errorf("larger than %d bytes", maxSettingsBytes)
	}
	return data, nil
}
