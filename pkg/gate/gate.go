package gate

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// Kind is the kind of tool call a [Request] describes.
type Kind string

const (
	KindShell Kind = "shell" // run Command in a shell
	KindEdit  Kind = "edit"  // write, create or delete Path
	KindRead  Kind = "read"  // read Path
	KindFetch Kind = "fetch" // fetch URL from the web
	KindMCP   Kind = "mcp"   // call Tool on MCP Server
)

// Request is one tool call to judge. Only the fields of its Kind are
// read. Relative paths are relative to the worktree.
type Request struct {
	Kind    Kind   `json:"kind"`
	Command string `json:"command,omitempty"`
	Path    string `json:"path,omitempty"`
	URL     string `json:"url,omitempty"`
	Server  string `json:"server,omitempty"`
	Tool    string `json:"tool,omitempty"`
}

// Gate judges requests against one policy for one worktree. It is
// immutable after [New] and safe for concurrent use.
type Gate struct {
	policy    Policy
	mode      Mode
	worktree  string // real path
	home      string // clean, as configured; "" if unknown
	homeReal  string // real path of home
	readRoots []string
	allow     []pattern
	deny      []pattern
	parsers   sync.Pool // *syntax.Parser; a Parser is not safe for concurrent use
}

// Option configures [New].
type Option func(*options)

type options struct {
	home    string
	homeSet bool
}

// WithHomeDir sets the directory "~" stands for, and under which the
// credential directories (~/.ssh, ~/.aws, ...) are looked for. By default
// it is the current user's home directory.
func WithHomeDir(dir string) Option {
	return func(o *options) { o.home, o.homeSet = dir, true }
}

// New binds p to worktree. The worktree's real path is resolved once
// here, so a worktree reached through a symlink is recognised whichever
// way a path names it. The policy is used as given: start from
// [LoadPolicy] or [DefaultPolicy] to get the built-in allowlist.
func New(p Policy, worktree string, opts ...Option) (*Gate, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	abs, err := filepath.Abs(worktree)
	if err != nil {
		return nil, fmt.Errorf("gate: worktree %q: %w", worktree, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("gate: worktree %q: %w", worktree, err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("gate: worktree %q: %w", worktree, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("gate: worktree %q is not a directory", worktree)
	}
	// The gate keeps its own copy: a caller changing its slices later
	// must not change (or race with) judgements.
	g := &Gate{policy: p.clone(), mode: p.Mode, worktree: real}
	if g.mode == "" {
		g.mode = ModeReview
	}
	home := o.home
	if !o.homeSet {
		home, _ = os.UserHomeDir() // without one, "~" stays unknown and is asked
	}
	if home != "" {
		if !filepath.IsAbs(home) {
			return nil, fmt.Errorf("gate: home directory %q is not absolute", home)
		}
		g.home = filepath.Clean(home)
		g.homeReal = g.home
		if r, err := realPath(g.home); err == nil {
			g.homeReal = r
		}
	}
	for _, root := range p.ReadRoots {
		if strings.HasPrefix(root, "~") {
			if g.home == "" {
				return nil, fmt.Errorf("gate: read root %q: no home directory", root)
			}
			root = g.home + root[1:]
		}
		r, err := realPath(filepath.Clean(root))
		if err != nil {
			return nil, fmt.Errorf("gate: read root %q: %w", root, err)
		}
		g.readRoots = append(g.readRoots, r)
	}
	for _, s := range p.Allow {
		pat, err := compileAllowPattern(s)
		if err != nil {
			return nil, fmt.Errorf("gate: allow: %w", err)
		}
		g.allow = append(g.allow, pat)
	}
	for _, s := range p.Deny {
		pat, err := compilePattern(s)
		if err != nil {
			return nil, fmt.Errorf("gate: deny: %w", err)
		}
		g.deny = append(g.deny, pat)
	}
	g.parsers.New = func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }
	return g, nil
}

// WithMode returns a gate like g but in mode m, for a session whose mode
// changes while it runs. g itself is unchanged.
func (g *Gate) WithMode(m Mode) (*Gate, error) {
	if !m.valid() || m == "" {
		return nil, fmt.Errorf("gate: unknown mode %q (want review, auto or readonly)", m)
	}
	n := &Gate{
		policy:    g.policy.clone(),
		mode:      m,
		worktree:  g.worktree,
		home:      g.home,
		homeReal:  g.homeReal,
		readRoots: g.readRoots,
		allow:     g.allow,
		deny:      g.deny,
	}
	n.policy.Mode = m
	n.parsers.New = g.parsers.New
	return n, nil
}

// Policy returns a copy of the policy the gate enforces.
func (g *Gate) Policy() Policy { return g.policy.clone() }

// Worktree returns the real path of the worktree.
func (g *Gate) Worktree() string { return g.worktree }

// Judge decides r. It never panics: should judging fail unexpectedly,
// the answer is ask, with the failure as the reason.
func (g *Gate) Judge(r Request) (j Judgement) {
	defer func() {
		if p := recover(); p != nil {
			j = Judgement{
				Decision: Ask,
				Category: categoryOf(r.Kind),
				Reason:   fmt.Sprintf("The gate failed while judging this request (%v), so it asks.", p),
			}
		}
		j.Unattended = g.policy.Unattended
	}()
	return g.judge(r)
}

func (g *Gate) judge(r Request) Judgement {
	switch r.Kind {
	case KindShell:
		return g.judgeShell(r.Command)
	case KindEdit:
		return single(g.editPath(g.expandHome(r.Path), g.rootCwd()))
	case KindRead:
		return single(g.readPath(g.expandHome(r.Path), g.rootCwd()))
	case KindFetch:
		return single(g.judgeFetch(r.URL))
	case KindMCP:
		return single(g.judgeMCP(r.Server, r.Tool))
	}
	return Judgement{Decision: Ask, Category: CategoryShell, Reason: fmt.Sprintf("Unknown request kind %q.", r.Kind)}
}

func categoryOf(k Kind) Category {
	switch k {
	case KindEdit:
		return CategoryEdit
	case KindRead:
		return CategoryRead
	case KindFetch:
		return CategoryWeb
	case KindMCP:
		return CategoryMCP
	}
	return CategoryShell
}

func single(v verdict) Judgement {
	return Judgement{Decision: v.decision, Category: v.category, Reason: sentence(v.reason)}
}

// expandHome expands a leading "~/" in a request path, in case the tool
// behind the request does; a path that means home is judged as home.
func (g *Gate) expandHome(p string) string {
	if g.home != "" && (p == "~" || strings.HasPrefix(p, "~/")) {
		return g.home + p[1:]
	}
	return p
}

func (g *Gate) rootCwd() cwdSet { return cwdSet{dirs: []string{g.worktree}} }

// editPath judges writing the file at p (as written in a request or a
// command) from the directories in cwds.
func (g *Gate) editPath(p string, cwds cwdSet) verdict {
	if p == "" {
		return askV(CategoryEdit, "the edit names no path")
	}
	if harmlessDevice(p) {
		return allowV(CategoryEdit, p+" is a device that stores nothing")
	}
	if g.mode == ModeReadonly {
		return denyV(CategoryEdit, "readonly mode allows no edits (of "+p+")")
	}
	targets, err := g.resolveArg(p, cwds)
	if err != nil {
		return askV(CategoryEdit, err.Error())
	}
	for _, t := range targets {
		if v := g.editTarget(t); v.decision != Allow {
			return v
		}
	}
	return allowV(CategoryEdit, "edits "+p+" inside the worktree")
}

func (g *Gate) editTarget(t target) verdict {
	kind, why := g.classifyPath(t.shown, t.real)
	if kind != notSensitive {
		return askV(CategoryEdit, fmt.Sprintf("%s %s; edits to it always need approval", t.shown, why))
	}
	rel, inside := g.relToWorktree(t.real)
	switch {
	case !inside:
		return askV(CategoryEdit, fmt.Sprintf("%s is outside the worktree (it resolves to %s)", t.shown, t.real))
	case rel == ".":
		return askV(CategoryEdit, t.shown+" is the worktree's root directory itself")
	}
	return allowV(CategoryEdit, "edits "+t.shown+" inside the worktree")
}

// readPath judges reading the file at p from the directories in cwds.
func (g *Gate) readPath(p string, cwds cwdSet) verdict {
	if p == "" {
		return askV(CategoryRead, "the read names no path")
	}
	if harmlessDevice(p) {
		return allowV(CategoryRead, p+" is a device, not a file")
	}
	targets, err := g.resolveArg(p, cwds)
	if err != nil {
		return askV(CategoryRead, err.Error())
	}
	for _, t := range targets {
		if v := g.readTarget(t); v.decision != Allow {
			return v
		}
	}
	return allowV(CategoryRead, "reads "+p+" inside the worktree")
}

func (g *Gate) readTarget(t target) verdict {
	if kind, why := g.classifyPath(t.shown, t.real); kind == credentialPath {
		return askV(CategoryRead, fmt.Sprintf("%s %s; reading it always needs approval", t.shown, why))
	}
	if within(t.real, g.worktree) {
		return allowV(CategoryRead, "reads inside the worktree")
	}
	for _, root := range g.readRoots {
		if within(t.real, root) {
			return allowV(CategoryRead, "reads inside the read root "+root)
		}
	}
	return askV(CategoryRead, fmt.Sprintf("%s is outside the worktree (it resolves to %s)", t.shown, t.real))
}

// sentence ends a reason with a full stop. Reasons are not capitalised,
// since many start with a command or file name.
func sentence(s string) string {
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}
