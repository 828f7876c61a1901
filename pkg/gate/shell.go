package gate

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Bounds on the work one judgement may do. A command past them is
// asked, never guessed at.
const (
	maxCommandBytes = 64 << 10 // source text of one command
	maxParts        = 512      // simple commands judged in one request
	maxShellDepth   = 3        // sh -c / eval strings nested in each other
	maxNesting      = 200      // compound commands nested in each other
	maxCwds         = 16       // directories a command may cd between
	maxShownCommand = 400      // bytes of a part's text kept in a Part
)

// scriptResult is the judgement of one shell script: the request's
// command, or a string run by sh -c or eval.
type scriptResult struct {
	parts []Part
	v     verdict
	// changesDir: the script runs cd, pushd or popd.
	changesDir bool
}

func (g *Gate) judgeShell(cmd string) Judgement {
	res := g.script(cmd, 0, g.rootCwd())
	return Judgement{
		Decision: res.v.decision,
		Category: res.v.category,
		Reason:   sentence(res.v.reason),
		Parts:    res.parts,
	}
}

// script parses and judges src. depth counts the sh -c and eval levels
// around it; cwds is where it starts running.
func (g *Gate) script(src string, depth int, cwds cwdSet) scriptResult {
	if len(src) > maxCommandBytes {
		return scriptResult{v: askV(CategoryShell, fmt.Sprintf("the command is %d bytes long, more than the %d the gate judges", len(src), maxCommandBytes))}
	}
	if strings.ContainsRune(src, 0) {
		return scriptResult{v: askV(CategoryShell, "the command contains a NUL byte")}
	}
	parser := g.parsers.Get().(*syntax.Parser)
	file, err := parser.Parse(strings.NewReader(src), "")
	// Returned only after a successful parse: a parser whose Parse
	// panicked is not reused.
	g.parsers.Put(parser)
	if err != nil {
		return scriptResult{v: askV(CategoryShell, "the command does not parse as bash: "+err.Error())}
	}
	if len(file.Stmts) == 0 {
		return scriptResult{v: askV(CategoryShell, "the command is empty")}
	}
	j := &judge{g: g, src: src, depth: depth, cwds: cwds, visited: cwds}
	j.stmts(file.Stmts)
	res := scriptResult{parts: j.parts, v: combineParts(j.parts), changesDir: j.changesDir}
	// Independent of the walk above: whatever it concluded, a command
	// holding a substitution anywhere is never allowed.
	if res.v.decision == Allow && hasSubstitution(file) {
		res.v = askV(CategoryShell, "the command contains a command or process substitution")
	}
	return res
}

// hasSubstitution reports a command or process substitution anywhere in
// node.
func hasSubstitution(node syntax.Node) bool {
	found := false
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst:
			found = true
		}
		return !found
	})
	return found
}

// judge walks one parsed script and collects the judgement of each part.
type judge struct {
	g          *Gate
	src        string
	depth      int
	cwds       cwdSet
	changesDir bool
	// ok, when set by the statement just judged, is where the shell is
	// if that statement succeeded (after cd DIR: DIR). See cwd.go.
	ok       *cwdSet
	visited  cwdSet // every directory the script may have been in
	parts    []Part
	nest     int
	overflow bool
}

func (j *judge) stmts(list []*syntax.Stmt) {
	for _, s := range list {
		j.stmt(s)
	}
}

func (j *judge) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	if len(j.parts) >= maxParts {
		if !j.overflow {
			j.overflow = true
			j.parts = append(j.parts, Part{
				Command:  "…",
				Decision: Ask, Category: CategoryShell,
				Reason: fmt.Sprintf("the command has more than %d parts, more than the gate judges.", maxParts),
			})
		}
		return
	}
	j.nest++
	defer func() { j.nest-- }()
	j.ok = nil
	defer func() {
		if s.Negated {
			j.ok = nil // "! cd dir" succeeds when cd fails
		}
	}()
	if j.nest > maxNesting {
		j.addPart(s, oneV(askV(CategoryShell, "the command is nested too deeply to judge")))
		return
	}
	switch c := s.Cmd.(type) {
	case nil:
		var t tally
		j.redirs(s.Redirs, &t)
		t.addIfEmpty(allowV(CategoryShell, "only redirects"))
		j.addPart(s, t)
		return
	case *syntax.CallExpr:
		j.call(s, c)
		return
	case *syntax.BinaryCmd:
		j.binary(c)
	case *syntax.Subshell:
		j.subshell(func() { j.stmts(c.Stmts) })
	case *syntax.Block:
		j.stmts(c.Stmts)
	case *syntax.IfClause:
		for clause := c; clause != nil; clause = clause.Else {
			j.stmts(clause.Cond)
			j.stmts(clause.Then)
		}
	case *syntax.WhileClause:
		j.loop(c)
		j.stmts(c.Cond)
		j.stmts(c.Do)
	case *syntax.ForClause:
		j.forHeader(s, c)
		j.loop(c)
		j.stmts(c.Do)
	case *syntax.CaseClause:
		j.caseHeader(s, c)
		for _, item := range c.Items {
			j.stmts(item.Stmts)
		}
	case *syntax.FuncDecl:
		j.addPart(s, oneV(askV(CategoryShell, "defines a shell function; the gate does not follow calls into it")))
		j.stmt(c.Body)
	case *syntax.ArithmCmd:
		var t tally
		j.expansions(c, &t)
		j.arithmetic(c.X, &t)
		j.addPart(s, t)
	case *syntax.LetClause:
		var t tally
		j.expansions(c, &t)
		for _, x := range c.Exprs {
			j.arithmetic(x, &t)
		}
		j.addPart(s, t)
	case *syntax.TestClause:
		j.addPart(s, j.testClause(c))
	case *syntax.DeclClause:
		j.addPart(s, j.declClause(c))
	case *syntax.TimeClause:
		j.stmt(c.Stmt)
	case *syntax.CoprocClause:
		j.addPart(s, oneV(askV(CategoryShell, "coproc runs a command in the background, connected to the shell")))
		j.subshell(func() { j.stmt(c.Stmt) })
	default:
		j.addPart(s, oneV(askV(CategoryShell, fmt.Sprintf("the gate does not judge %T commands", c))))
	}
	if _, isAnd := s.Cmd.(*syntax.BinaryCmd); !isAnd {
		// Where an if, loop or block leaves the shell when it succeeds
		// depends on the branch taken: not known.
		j.ok = nil
	}
	// Redirections of a compound command apply to all of it; they get a
	// part of their own.
	if len(s.Redirs) > 0 {
		var t tally
		j.redirs(s.Redirs, &t)
		t.addIfEmpty(allowV(CategoryShell, "redirections only"))
		j.addPartText(j.text(s.Redirs[0].Pos(), s.End()), t)
	}
}

func (j *judge) forHeader(s *syntax.Stmt, c *syntax.ForClause) {
	var t tally
	switch loop := c.Loop.(type) {
	case *syntax.WordIter:
		for _, w := range loop.Items {
			j.word(w, &t)
		}
		if !safeVarName(loop.Name.Value) {
			t.add(askV(CategoryShell, fmt.Sprintf("the loop sets %s, which changes how later commands run", loop.Name.Value)))
		}
	case *syntax.CStyleLoop:
		j.expansions(loop, &t)
		for _, x := range []syntax.ArithmExpr{loop.Init, loop.Cond, loop.Post} {
			j.arithmetic(x, &t)
		}
	}
	if len(t.items) > 0 && t.decision() != Allow {
		j.addPartText(j.text(s.Pos(), loopHeaderEnd(c)), t)
	}
}

func loopHeaderEnd(c *syntax.ForClause) syntax.Pos {
	if c.DoPos.IsValid() {
		return c.DoPos
	}
	return c.Loop.End()
}

func (j *judge) caseHeader(s *syntax.Stmt, c *syntax.CaseClause) {
	var t tally
	j.word(c.Word, &t)
	for _, item := range c.Items {
		for _, p := range item.Patterns {
			j.word(p, &t)
		}
	}
	if len(t.items) > 0 && t.decision() != Allow {
		j.addPartText(j.text(s.Pos(), c.Word.End()), t)
	}
}

// text returns the source between two positions.
func (j *judge) text(from, to syntax.Pos) string {
	a, b := int(from.Offset()), int(to.Offset())
	if a < 0 || b > len(j.src) || a > b {
		return ""
	}
	return j.src[a:b]
}

// shown is the source text of a word, shortened for a reason.
func shown(w *syntax.Word, j *judge) string {
	if w == nil || len(w.Parts) == 0 {
		return "''"
	}
	return clip(j.text(w.Pos(), w.End()), 80)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func (j *judge) addPart(s *syntax.Stmt, t tally) {
	j.addPartText(j.text(s.Pos(), stmtEnd(s)), t)
}

// stmtEnd is where a statement's text ends, leaving out the ';' or '&'
// that Stmt.End includes.
func stmtEnd(s *syntax.Stmt) syntax.Pos {
	end := s.Position
	if s.Cmd != nil {
		end = s.Cmd.End()
	}
	for _, r := range s.Redirs {
		if r.End().After(end) {
			end = r.End()
		}
	}
	return end
}

func (j *judge) addPartText(text string, t tally) {
	v := t.verdict()
	j.parts = append(j.parts, Part{
		Command:  clip(strings.TrimSpace(text), maxShownCommand),
		Decision: v.decision,
		Category: v.category,
		Reason:   sentence(v.reason),
	})
}

// combineParts turns the parts of a script into its verdict: the
// strictest decision, explained by the parts that have it.
func combineParts(parts []Part) verdict {
	if len(parts) == 1 {
		p := parts[0]
		return verdict{p.Decision, p.Category, strings.TrimSuffix(p.Reason, ".")}
	}
	var t tally
	for _, p := range parts {
		reason := strings.TrimSuffix(p.Reason, ".")
		if p.Decision != Allow {
			reason = fmt.Sprintf("%s: %s", clip(p.Command, 80), reason)
		}
		t.add(verdict{p.Decision, p.Category, reason})
	}
	if t.decision() == Allow {
		return allowV(CategoryShell, fmt.Sprintf("all %d commands are allowed", len(parts)))
	}
	return t.verdict()
}
