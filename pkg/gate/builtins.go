package gate

import (
	"fmt"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"
)

// dirChange judges cd, pushd, popd and dirs: the shell builtins that
// move the current directory. Where they may lead is already part of the
// directory set every relative path is judged in; here the destination
// itself must be readable.
func (j *judge) dirChange(c cmdLine, f *facts, t *tally) {
	f.needPattern, f.checkArgs, f.readOnly = false, false, true
	key := c.key()
	if key == "popd" || key == "dirs" {
		t.add(allowV(CategoryShell, key+" only moves within directories already judged"))
		return
	}
	_, operands, _ := scanOpts(c.words, 1, optSpec{posix: true})
	if len(operands) == 0 {
		if key == "pushd" {
			t.add(allowV(CategoryShell, "pushd swaps directories already judged"))
			return
		}
		if j.g.home == "" {
			t.add(askV(CategoryRead, "cd without a directory goes home, and the home directory is not known"))
			return
		}
		t.concern(j.g.readPath(j.g.home, c.cwds))
		t.add(allowV(CategoryShell, "cd to the home directory"))
		return
	}
	w, node := c.words[operands[0]], c.nodes[operands[0]]
	switch {
	case w.known() && w.value == "-":
		t.add(askV(CategoryRead, "cd - returns to a directory the gate cannot know"))
	case key == "pushd" && w.known() && (strings.HasPrefix(w.value, "+") || isDigits(strings.TrimPrefix(w.value, "-"))):
		t.add(allowV(CategoryShell, "pushd rotates directories already judged"))
	default:
		j.readArg(w, node, c.cwds, t)
		t.add(allowV(CategoryShell, "changes to a directory inside the worktree"))
	}
}

// setBuiltin allows set with options that only make the shell stricter
// or chattier; set without arguments prints every variable, secrets
// included.
func (j *judge) setBuiltin(c cmdLine, f *facts, t *tally) {
	f.needPattern, f.checkArgs, f.readOnly = false, false, true
	if len(c.words) == 1 {
		t.add(askV(CategoryShell, "set without arguments prints every shell variable, which may include secrets"))
		return
	}
	for i := 1; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			t.add(askV(CategoryShell, "set with an argument only known when it runs"))
			return
		}
		v := w.value
		if v == "--" || v == "-" {
			break // the rest sets positional parameters
		}
		if len(v) < 2 || (v[0] != '-' && v[0] != '+') {
			break
		}
		for _, flag := range v[1:] {
			if flag == 'o' {
				if i+1 < len(c.words) {
					i++
					if !c.words[i].known() || !safeSetOption(c.words[i].value) {
						t.add(askV(CategoryShell, fmt.Sprintf("set -o %s is not an option the gate knows to be harmless", shown(c.nodes[i], j))))
						return
					}
				}
				continue
			}
			if !strings.ContainsRune("abefhmnuvxBCEHPT", flag) {
				t.add(askV(CategoryShell, fmt.Sprintf("set -%c is not an option the gate knows to be harmless", flag)))
				return
			}
		}
	}
	t.add(allowV(CategoryShell, "set of harmless shell options"))
}

func safeSetOption(name string) bool {
	switch name {
	case "errexit", "nounset", "pipefail", "xtrace", "verbose", "noglob", "noclobber",
		"allexport", "errtrace", "functrace", "notify", "posix", "braceexpand",
		"physical", "monitor", "noexec", "hashall":
		return true
	}
	return false
}

func safeShopt(c cmdLine) bool {
	sawMode := false
	for _, w := range c.words[1:] {
		if !w.known() {
			return false
		}
		switch w.value {
		case "-s", "-u", "-q", "-p":
			sawMode = true
		case "nullglob", "globstar", "dotglob", "extglob", "failglob", "nocaseglob",
			"nocasematch", "lastpipe", "inherit_errexit", "globasciiranges":
		default:
			return false
		}
	}
	return sawMode || len(c.words) == 1
}

// variableBuiltin judges unset and read, which take variable names. A
// name with an index ('a[$(cmd)]') is arithmetic and can run code.
func (j *judge) variableBuiltin(c cmdLine, f *facts, t *tally) {
	f.needPattern, f.checkArgs, f.readOnly = false, false, true
	spec := optSpec{}
	if c.key() == "read" {
		spec.short = "adinNptu"
	}
	opts, operands, ok := scanOpts(c.words, 1, spec)
	if !ok {
		t.add(askV(CategoryShell, c.name()+" is missing an option's value"))
		return
	}
	names := operands
	for _, o := range optValues(opts, "-a") {
		names = append(names, o.valueIdx)
	}
	for _, i := range names {
		if i < 0 || !c.words[i].known() || !syntax.ValidName(c.words[i].value) {
			t.add(askV(CategoryShell, fmt.Sprintf("%s takes a variable name the gate cannot check", c.name())))
			return
		}
		if name := c.words[i].value; c.key() == "read" && !safeVarName(name) {
			t.add(askV(CategoryShell, fmt.Sprintf("read sets %s, which can change what later commands run", name)))
			return
		}
	}
	t.add(allowV(CategoryShell, c.name()+" of plain variables"))
}

// safeVarName decides whether assigning a variable is harmless. Many
// programs, and bash itself, take commands or code paths from the
// environment (PATH, LD_PRELOAD, BASH_ENV, GIT_SSH_COMMAND, PAGER,
// NODE_OPTIONS, GOFLAGS=-toolexec=...), and they use upper-case names by
// convention. So: a few well-known harmless upper-case names are
// allowed, and otherwise only names with a lower-case letter, except the
// lower-case proxy variables.
func safeVarName(name string) bool {
	switch name {
	case "CI", "DEBUG", "VERBOSE", "NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
		"TERM", "COLUMNS", "LINES", "LANG", "LANGUAGE", "TZ",
		"GOOS", "GOARCH", "GOARM", "GOAMD64", "CGO_ENABLED", "GOMAXPROCS", "GOGC", "GOTRACEBACK",
		"NODE_ENV", "RUST_BACKTRACE", "RUST_LOG", "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE":
		return true
	}
	if strings.HasPrefix(name, "LC_") {
		return true
	}
	if strings.HasSuffix(strings.ToLower(name), "_proxy") {
		return false
	}
	return strings.IndexFunc(name, unicode.IsLower) >= 0
}
