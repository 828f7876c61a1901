package gate

import (
	"fmt"
	"path"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// cmdLine is a simple command as the gate sees it: its words (the first
// is the command name) and where it may run.
type cmdLine struct {
	words []word
	nodes []*syntax.Word
	cwds  cwdSet
}

// name is the command name as written.
func (c cmdLine) name() string { return c.words[0].value }

// key is the name used to recognise the command: its base name, in lower
// case, so /usr/bin/curl and CURL (on a case-insensitive file system)
// are recognised as curl.
func (c cmdLine) key() string { return commandKey(c.name()) }

// from returns the command that starts at word i, as run by a wrapper.
func (c cmdLine) from(i int) cmdLine {
	return cmdLine{words: c.words[i:], nodes: c.nodes[i:], cwds: c.cwds}
}

// text is the command's source text.
func (c cmdLine) text(j *judge) string {
	if len(c.nodes) == 0 {
		return ""
	}
	return clip(j.text(c.nodes[0].Pos(), c.nodes[len(c.nodes)-1].End()), 80)
}

// valueWord returns the word holding an option's value; an attached value
// is a known word of its own.
func (c cmdLine) valueWord(o option) (word, *syntax.Word) {
	if o.valueIdx >= 0 {
		return c.words[o.valueIdx], c.nodes[o.valueIdx]
	}
	return word{value: o.value, static: true}, c.nodes[o.idx]
}

func commandKey(name string) string {
	return strings.ToLower(path.Base(name))
}

// baseKey strips a version suffix: python3.12 and python3 are python.
func baseKey(key string) string {
	return strings.TrimRight(key, "0123456789.")
}

// facts are what classifying a command found out, which decides how the
// rest of its judgement goes.
type facts struct {
	// needPattern: the command runs only if an allow pattern matches it.
	// Wrappers clear it: their inner command is judged instead.
	needPattern bool
	// readOnly: the command is known not to write, so readonly mode may
	// run it.
	readOnly bool
	// writes explains how the command writes, for readonly mode.
	writes string
	// checkArgs: judge the arguments not claimed below as files read.
	checkArgs bool
	// claimed marks words already judged (edit targets, option values
	// that are not files).
	claimed []bool
	// argCwds, when set, is where the arguments are relative to (git -C).
	argCwds *cwdSet
	// matchWords, when set, are the words allow patterns are matched
	// against, with options that only say where to run left out.
	matchWords []word
}

func (f *facts) claim(idx ...int) {
	for _, i := range idx {
		if i >= 0 && i < len(f.claimed) {
			f.claimed[i] = true
		}
	}
}

// command judges one simple command (or the command run by a wrapper).
func (j *judge) command(c cmdLine, t *tally) {
	if !c.words[0].known() {
		t.add(askV(CategoryShell, fmt.Sprintf("the command name %s is not a literal word, so the gate cannot tell what runs", shown(c.nodes[0], j))))
		return
	}
	if c.name() == "" {
		t.add(askV(CategoryShell, "the command name is empty"))
		return
	}
	if j.denied(c.words, t) {
		return
	}
	f := facts{needPattern: true, checkArgs: true, claimed: make([]bool, len(c.words))}
	f.claimed[0] = true
	j.classify(c, &f, t)
	if f.matchWords != nil && j.denied(f.matchWords, t) {
		return
	}
	if f.checkArgs {
		j.checkArgs(c, &f, t)
	}
	if f.needPattern {
		words := c.words
		if f.matchWords != nil {
			words = f.matchWords
		}
		j.allowlist(c, words, t)
	}
	if j.g.mode == ModeReadonly {
		switch {
		case f.writes != "" && t.decision() != Deny:
			t.add(denyV(CategoryEdit, "readonly mode: "+f.writes))
		case f.needPattern && !f.readOnly:
			t.add(askV(CategoryShell, fmt.Sprintf("readonly mode: %s is not known to be read-only", c.name())))
		}
	}
}

// denied matches words against the policy's deny patterns.
func (j *judge) denied(words []word, t *tally) bool {
	for _, p := range j.g.deny {
		if p.match(words) {
			t.add(denyV(CategoryShell, fmt.Sprintf("denied by the policy pattern %q", p.text)))
			return true
		}
	}
	return false
}

// allowlist matches the command against the policy's allow patterns.
// When another check already raised a concern, the missing pattern is
// not mentioned: the specific concern is what the human needs to read.
func (j *judge) allowlist(c cmdLine, words []word, t *tally) {
	for _, p := range j.g.allow {
		if p.match(words) {
			t.add(allowV(CategoryShell, fmt.Sprintf("allowed by the pattern %q", p.text)))
			return
		}
	}
	if t.decision() != Allow {
		return
	}
	reason := fmt.Sprintf("%s is not on the allowlist", c.text(j))
	if hasNonASCII(c.name()) {
		reason += fmt.Sprintf(" (its name %q has non-ASCII letters, which can imitate other commands)", c.name())
	}
	t.add(askV(CategoryShell, reason))
}

func hasNonASCII(s string) bool {
	for _, r := range s {
		if r > unicode.MaxASCII {
			return true
		}
	}
	return false
}

// checkArgs judges every argument not yet claimed as a file the command
// may read: one outside the worktree, or a credential file, is asked.
// Options are skipped, except for the value of --name=value.
func (j *judge) checkArgs(c cmdLine, f *facts, t *tally) {
	if f.argCwds != nil {
		c.cwds = *f.argCwds
	}
	endOfOpts := false
	for i := 1; i < len(c.words); i++ {
		if f.claimed[i] {
			continue
		}
		w := c.words[i]
		if w.known() && !endOfOpts {
			if w.value == "--" {
				endOfOpts = true
				continue
			}
			if strings.HasPrefix(w.value, "-") && len(w.value) > 1 {
				if _, value, ok := strings.Cut(w.value, "="); ok && strings.HasPrefix(w.value, "--") && looksLikePath(value) {
					t.concern(j.g.readPath(expandHomeValue(value, j.g.home), c.cwds))
				}
				continue
			}
		}
		j.readArg(w, c.nodes[i], c.cwds, t)
	}
}

// looksLikePath is used only for option values, which are mostly not
// files: those that could climb out of the worktree are checked.
func looksLikePath(s string) bool {
	return strings.Contains(s, "/") || strings.HasPrefix(s, "~") || s == ".."
}

// expandHomeValue treats "~/" at the start of an option value as home:
// bash leaves it alone there, but some programs expand it themselves.
func expandHomeValue(s, home string) string {
	if home != "" && (s == "~" || strings.HasPrefix(s, "~/")) {
		return home + s[1:]
	}
	return s
}

// classify recognises the command and runs its specific rules.
func (j *judge) classify(c cmdLine, f *facts, t *tally) {
	key := c.key()
	switch key {
	case ":", "exit", "return", "break", "continue", "shift", "wait", "times", "jobs":
		f.needPattern, f.checkArgs, f.readOnly = false, false, true
		t.add(allowV(CategoryShell, c.name()+" is a shell builtin with no effect outside the shell"))
		return
	case "cd", "pushd", "popd", "dirs":
		j.dirChange(c, f, t)
		return
	case "set":
		j.setBuiltin(c, f, t)
		return
	case "unset", "read":
		j.variableBuiltin(c, f, t)
		return
	case "alias", "unalias", "shopt", "enable", "trap", "bind", "hash", "fc", "complete", "compopt":
		if key == "shopt" && safeShopt(c) {
			f.needPattern, f.checkArgs, f.readOnly = false, false, true
			t.add(allowV(CategoryShell, "shopt of harmless globbing options"))
			return
		}
		f.needPattern, f.checkArgs = false, false
		t.add(askV(CategoryShell, fmt.Sprintf("%s changes how the shell runs later commands", c.name())))
		return
	case "echo", "true", "false", "sleep", "seq", "pwd", "whoami", "id", "nproc", "uname",
		"basename", "dirname", "tr", "expr", "which", "type":
		f.checkArgs, f.readOnly = false, true
		return
	case "printf":
		f.checkArgs, f.readOnly = false, true
		if opts, _, _ := scanOpts(c.words, 1, optSpec{short: "v", posix: true}); hasOpt(opts, "-v") {
			t.add(askV(CategoryShell, "printf -v assigns a variable, whose name can hold an array index that runs code"))
		}
		return
	case "test", "[":
		f.checkArgs, f.readOnly = false, true
		for _, w := range c.words[1:] {
			if w.known() && (w.value == "-v" || w.value == "-R") {
				t.add(askV(CategoryShell, "test -v evaluates array subscripts, which can run code"))
			}
		}
		return
	case "eval":
		j.eval(c, f, t)
		return
	case "source", ".":
		f.needPattern, f.checkArgs = false, false
		t.add(askV(CategoryShell, fmt.Sprintf("%s runs the commands in a file, which the gate cannot see", c.name())))
		return
	case "exec", "command", "builtin", "env", "nohup", "timeout", "nice", "ionice", "stdbuf", "setsid", "time", "busybox":
		j.wrapper(c, f, t)
		return
	case "xargs":
		j.xargs(c, f, t)
		return
	case "watch":
		j.watch(c, f, t)
		return
	case "find":
		j.find(c, f, t)
		return
	case "git":
		j.git(c, f, t)
		return
	case "go":
		j.goTool(c, f, t)
		return
	case "sed":
		j.sed(c, f, t)
		return
	}
	if why := wrapperReason(key); why != "" {
		f.needPattern, f.checkArgs = false, false
		if kind := shellKind(key); kind == shellPOSIX {
			j.shell(c, f, t)
			return
		}
		t.add(askV(CategoryShell, fmt.Sprintf("%s %s", c.name(), why)))
		return
	}
	if j.interpreter(c, f, t) {
		return
	}
	if j.network(c, f, t) {
		return
	}
	if j.writer(c, f, t) {
		return
	}
	j.reader(c, f, t)
}

// call judges a simple command together with its statement's
// redirections and assignments, as one part.
func (j *judge) call(s *syntax.Stmt, c *syntax.CallExpr) {
	var t tally
	line := cmdLine{cwds: j.cwds}
	for _, a := range c.Args {
		line.words = append(line.words, j.word(a, &t))
		line.nodes = append(line.nodes, a)
	}
	context := "the assignment"
	if len(c.Args) > 0 {
		context = "the command's assignment"
	}
	for _, a := range c.Assigns {
		j.assign(a, context, &t)
	}
	j.redirs(s.Redirs, &t)
	if len(line.words) > 0 {
		j.command(line, &t)
	}
	t.addIfEmpty(allowV(CategoryShell, "only assigns harmless variables"))
	j.addPart(s, t)
	if len(line.words) > 0 {
		j.afterCd(line)
	}
}
