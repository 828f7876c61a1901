package gate

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

type shellLanguage int

const (
	notAShell  shellLanguage = iota
	shellPOSIX               // sh and bash: -c strings are parsed and judged
	shellOther               // shells whose language the gate does not parse
)

func shellKind(key string) shellLanguage {
	switch baseKey(key) {
	case "sh", "bash", "dash", "ash", "rbash":
		return shellPOSIX
	case "zsh", "ksh", "mksh", "pdksh", "fish", "csh", "tcsh", "pwsh", "powershell",
		"xonsh", "nu", "elvish", "yash", "oksh":
		return shellOther
	}
	return notAShell
}

// wrapperReason says why a command runs other commands, or is empty. An
// allow pattern naming such a command is refused: the gate judges what
// the wrapper runs, not the wrapper.
func wrapperReason(key string) string {
	switch key {
	case "sudo", "doas", "su", "pkexec", "runuser", "chroot", "nsenter", "unshare", "sg", "newgrp":
		return "runs commands with other privileges or in another system context"
	case "eval":
		return "runs a string as shell code"
	case "source", ".":
		return "runs the commands in a file"
	case "exec", "command", "builtin", "env", "nohup", "timeout", "nice", "ionice", "stdbuf",
		"setsid", "time", "busybox", "xargs", "watch":
		return "runs another command, which is judged instead"
	case "parallel", "flock", "script", "unbuffer", "chrt", "taskset", "caffeinate",
		"systemd-run", "strace", "ltrace", "gdb", "lldb", "valgrind", "fakeroot", "firejail",
		"bwrap", "ssh-agent", "dbus-run-session", "xvfb-run", "expect", "tmux", "screen":
		return "runs another command in a way the gate does not follow"
	case "awk", "gawk", "mawk", "nawk":
		return "runs an awk program, which can run commands (system, pipes) and write files"
	}
	switch shellKind(key) {
	case shellPOSIX:
		return "runs shell code, which is judged instead"
	case shellOther:
		return "runs code in a shell language the gate does not parse"
	}
	return ""
}

// wrapper judges the commands that run another command with the same
// words: the wrapped command is judged as if it stood alone, plus what
// the wrapper itself adds (env's variables, time's output file).
func (j *judge) wrapper(c cmdLine, f *facts, t *tally) {
	f.needPattern, f.checkArgs = false, false
	key := c.key()
	spec := optSpec{posix: true}
	switch key {
	case "exec":
		spec.short = "a"
	case "env":
		spec.short, spec.long = "uCS", []string{"unset", "chdir", "split-string"}
	case "timeout":
		spec.short, spec.long = "sk", []string{"signal", "kill-after"}
	case "nice":
		spec.short, spec.long = "n", []string{"adjustment"}
	case "ionice":
		spec.short, spec.long = "cnpPu", []string{"class", "classdata", "pid", "pgid", "uid"}
	case "stdbuf":
		spec.short, spec.long = "ioe", []string{"input", "output", "error"}
	case "time":
		spec.short, spec.long = "fo", []string{"format", "output"}
	}
	opts, operands, ok := scanOpts(c.words, 1, spec)
	if !ok {
		t.add(askV(CategoryShell, c.name()+" is missing an option's value"))
		return
	}
	switch key {
	case "command":
		if hasOpt(opts, "-v", "-V") {
			f.readOnly = true
			t.add(allowV(CategoryShell, "command -v only looks a name up"))
			return
		}
	case "env":
		if hasOpt(opts, "-C", "--chdir", "-S", "--split-string") {
			t.add(askV(CategoryShell, "env -C and -S change where and what the command runs in ways the gate does not follow"))
			return
		}
		for len(operands) > 0 {
			w := c.words[operands[0]]
			name, _, isAssign := strings.Cut(w.value, "=")
			if !w.known() || !isAssign {
				break
			}
			if !syntax.ValidName(name) || !safeVarName(name) {
				t.add(askV(CategoryShell, fmt.Sprintf("env sets %s, which can change what the command runs", name)))
			}
			operands = operands[1:]
		}
		if len(operands) == 0 {
			t.add(askV(CategoryShell, "env without a command prints the environment, which may hold secrets"))
			return
		}
	case "timeout":
		if len(operands) > 0 {
			operands = operands[1:] // the duration
		}
	case "ionice":
		if hasOpt(opts, "-p", "-P", "-u", "--pid", "--pgid", "--uid") {
			t.add(askV(CategoryShell, "ionice -p/-P/-u acts on other processes"))
			return
		}
	case "time":
		j.optionEdits(c, f, t, opts, "time -o writes a file", "-o", "--output")
	}
	if len(operands) == 0 {
		if key == "exec" {
			t.add(allowV(CategoryShell, "exec without a command only applies its redirections"))
			return
		}
		t.add(askV(CategoryShell, c.name()+" without a command to run"))
		return
	}
	j.command(c.from(operands[0]), t)
}

// shell judges sh -c and bash -c by parsing and judging the string they
// run. A shell given a script file or reading its input runs code the
// gate cannot see.
func (j *judge) shell(c cmdLine, f *facts, t *tally) {
	dashC := false
	i := 1
options:
	for ; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			break
		}
		v := w.value
		switch {
		case v == "--" || v == "-":
			i++
			break options
		case v == "--norc" || v == "--noprofile" || v == "--posix" || v == "--login" || v == "--noediting":
		case strings.HasPrefix(v, "--"):
			t.add(askV(CategoryShell, fmt.Sprintf("%s %s is an option the gate does not follow", c.name(), v)))
			return
		case strings.HasPrefix(v, "-") || strings.HasPrefix(v, "+"):
			for _, flag := range v[1:] {
				switch {
				case flag == 'c':
					dashC = true
				case flag == 'o' || flag == 'O':
					i++ // the option's name
				case flag == 's' || flag == 'i':
					t.add(askV(CategoryShell, fmt.Sprintf("%s -%c reads commands from its input, which the gate cannot see", c.name(), flag)))
					return
				case !strings.ContainsRune("eulxvnpEBCHThkfmabr", flag):
					t.add(askV(CategoryShell, fmt.Sprintf("%s -%c is an option the gate does not follow", c.name(), flag)))
					return
				}
			}
		default:
			break options
		}
	}
	switch {
	case dashC && i < len(c.words):
		w := c.words[i]
		if !w.known() {
			t.add(askV(CategoryShell, fmt.Sprintf("the code %s -c runs is only known when it runs", c.name())))
			return
		}
		j.nested(c.name()+" -c", w.value, false, c.cwds, t)
	case dashC:
		t.add(askV(CategoryShell, c.name()+" -c without code to run"))
	case i < len(c.words):
		t.add(askV(CategoryShell, fmt.Sprintf("%s runs the script %s, which the gate cannot see", c.name(), shown(c.nodes[i], j))))
	default:
		t.add(askV(CategoryShell, c.name()+" reads commands from its input, which the gate cannot see"))
	}
}

// eval judges the string eval runs: its arguments joined by spaces.
func (j *judge) eval(c cmdLine, f *facts, t *tally) {
	f.needPattern, f.checkArgs = false, false
	parts := make([]string, 0, len(c.words)-1)
	for i, w := range c.words[1:] {
		if !w.known() {
			t.add(askV(CategoryShell, fmt.Sprintf("eval runs %s, which is only known when it runs", shown(c.nodes[i+1], j))))
			return
		}
		parts = append(parts, w.value)
	}
	if len(parts) == 0 {
		t.add(allowV(CategoryShell, "eval without code does nothing"))
		return
	}
	j.nested("eval", strings.Join(parts, " "), true, c.cwds, t)
}

// nested judges shell code held in a string. sameShell is true for
// eval, whose cd would move the commands after it.
func (j *judge) nested(label, src string, sameShell bool, cwds cwdSet, t *tally) {
	if j.depth+1 > maxShellDepth {
		t.add(askV(CategoryShell, label+" nests shell code too deeply to judge"))
		return
	}
	res := j.g.script(src, j.depth+1, cwds)
	if sameShell && res.changesDir {
		t.add(askV(CategoryShell, label+" changes the directory that later commands run in"))
	}
	v := res.v
	switch {
	case v.decision == Allow:
		t.add(allowV(CategoryShell, label+" runs only allowed commands"))
	case len(res.parts) == 1:
		t.add(verdict{v.decision, v.category, fmt.Sprintf("%s runs %s: %s", label, res.parts[0].Command, v.reason)})
	default:
		t.add(verdict{v.decision, v.category, fmt.Sprintf("%s runs code where %s", label, v.reason)})
	}
}

// xargs runs its command with arguments read from its input. Whatever
// the command, those arguments are unseen, so xargs with a command is
// always asked (or denied, if the command is).
func (j *judge) xargs(c cmdLine, f *facts, t *tally) {
	f.needPattern, f.checkArgs = false, false
	opts, operands, ok := scanOpts(c.words, 1, optSpec{
		short: "aEILnPsd",
		long:  []string{"arg-file", "eof", "replace", "max-lines", "max-args", "max-procs", "max-chars", "delimiter", "process-slot-var"},
		posix: true,
	})
	if !ok {
		t.add(askV(CategoryShell, "xargs is missing an option's value"))
		return
	}
	for _, o := range optValues(opts, "-a", "--arg-file") {
		w, node := c.valueWord(o)
		j.readArg(w, node, c.cwds, t)
	}
	if len(operands) == 0 {
		f.readOnly = true
		t.add(allowV(CategoryShell, "xargs without a command only echoes its input"))
		return
	}
	inner := c.from(operands[0])
	j.command(inner, t)
	t.add(askV(CategoryShell, fmt.Sprintf("xargs runs %s with arguments read from its input, which the gate cannot see", inner.text(j))))
}

// watch runs its command repeatedly through sh -c (or directly with -x).
func (j *judge) watch(c cmdLine, f *facts, t *tally) {
	f.needPattern, f.checkArgs = false, false
	opts, operands, ok := scanOpts(c.words, 1, optSpec{short: "nq", long: []string{"interval", "equexit"}, posix: true})
	if !ok || len(operands) == 0 {
		t.add(askV(CategoryShell, "watch without a command to run"))
		return
	}
	if hasOpt(opts, "-x", "--exec") {
		j.command(c.from(operands[0]), t)
		return
	}
	parts := make([]string, 0, len(operands))
	for _, i := range operands {
		if !c.words[i].known() {
			t.add(askV(CategoryShell, fmt.Sprintf("watch runs %s, which is only known when it runs", shown(c.nodes[i], j))))
			return
		}
		parts = append(parts, c.words[i].value)
	}
	j.nested("watch", strings.Join(parts, " "), false, c.cwds, t)
}

// find is read-only unless its expression writes (-delete, -fprint...)
// or runs commands (-exec...). The roots are judged as reads; the
// expression's words are patterns and tests, not files.
func (j *judge) find(c cmdLine, f *facts, t *tally) {
	f.readOnly = true
	i := 1
	for ; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			break
		}
		if w.value == "-H" || w.value == "-L" || w.value == "-P" || strings.HasPrefix(w.value, "-O") {
			f.claim(i)
			continue
		}
		if w.value == "-D" {
			f.claim(i, i+1)
			i++
			continue
		}
		break
	}
	for ; i < len(c.words); i++ {
		w := c.words[i]
		if w.known() && (strings.HasPrefix(w.value, "-") || w.value == "(" || w.value == "!") {
			break
		}
	}
	for k := i; k < len(c.words); k++ {
		f.claim(k)
		w := c.words[k]
		if !w.known() {
			continue
		}
		switch w.value {
		case "-exec", "-execdir", "-ok", "-okdir":
			end := k + 1
			for end < len(c.words) && !(c.words[end].known() && (c.words[end].value == ";" || c.words[end].value == "+")) {
				f.claim(end)
				end++
			}
			if end == k+1 {
				t.add(askV(CategoryShell, fmt.Sprintf("find %s without a command", w.value)))
				return
			}
			inner := cmdLine{words: c.words[k+1 : end], nodes: c.nodes[k+1 : end], cwds: c.cwds}
			j.command(inner, t)
			t.add(askV(CategoryShell, fmt.Sprintf("find %s runs %s for every file found", w.value, inner.text(j))))
			k = end
		case "-delete":
			f.writes = "find -delete removes files"
			t.add(askV(CategoryEdit, "find -delete removes every file it finds, which the gate cannot list"))
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			f.writes = "find " + w.value + " writes a file"
			if k+1 < len(c.words) {
				j.editArg(c.words[k+1], c.nodes[k+1], c.cwds, t)
			}
		}
	}
}
