package gate

import (
	"fmt"
	"slices"
	"strings"
)

// interpreterSpec describes how a language interpreter takes code on its
// command line, which the gate cannot judge.
type interpreterSpec struct {
	inline     string   // short options whose value is code: "c" for python -c
	inlineLong []string // long options whose value is code
	values     string   // other short options that take a value
	longValues []string // other long options that take a value
	module     bool     // -m names a module to run (python)
	subcommand bool     // the first operand may be a subcommand (deno, bun)
}

func interpreterFor(key string) (interpreterSpec, bool) {
	switch baseKey(key) {
	case "python", "pypy":
		return interpreterSpec{inline: "c", values: "WXQ", module: true}, true
	case "node", "nodejs":
		return interpreterSpec{inline: "ep", inlineLong: []string{"eval", "print"}, values: "rC", longValues: []string{"require", "import", "loader", "conditions", "input-type"}}, true
	case "deno", "bun":
		return interpreterSpec{inline: "ep", inlineLong: []string{"eval", "print"}, subcommand: true}, true
	case "ruby":
		return interpreterSpec{inline: "e", values: "rIC"}, true
	case "perl":
		return interpreterSpec{inline: "eE", values: "IMm"}, true
	case "php":
		return interpreterSpec{inline: "rBRFE", values: "cdz"}, true
	case "lua", "luajit":
		return interpreterSpec{inline: "e", values: "l"}, true
	case "rscript":
		return interpreterSpec{inline: "e"}, true
	case "julia":
		return interpreterSpec{inline: "eE", inlineLong: []string{"eval", "print"}}, true
	case "osascript":
		return interpreterSpec{inline: "e"}, true
	case "tclsh", "wish", "guile", "racket", "sbcl", "clisp", "ghci", "irb", "jshell":
		return interpreterSpec{inline: "ce", inlineLong: []string{"eval"}}, true
	}
	return interpreterSpec{}, false
}

// interpreter judges a language interpreter. Code on the command line
// (python -c, node -e, perl -e...) or read from the input is in another
// language, so it is asked whatever the allowlist says. A script or
// module is run like any other program: an allow pattern decides, and
// python -m pip is judged as pip.
func (j *judge) interpreter(c cmdLine, f *facts, t *tally) bool {
	spec, ok := interpreterFor(c.key())
	if !ok {
		return false
	}
	shortValues := spec.inline + spec.values
	if spec.module {
		shortValues += "m"
	}
	long := append(append([]string(nil), spec.inlineLong...), spec.longValues...)
	opts, operands, ok := scanOpts(c.words, 1, optSpec{short: shortValues, long: long, posix: true})
	if !ok {
		t.add(askV(CategoryShell, c.name()+" is missing an option's value"))
		return true
	}
	for _, o := range opts {
		f.claim(o.valueIdx)
		isInline := (len(o.name) == 2 && strings.ContainsRune(spec.inline, rune(o.name[1]))) ||
			(strings.HasPrefix(o.name, "--") && slices.Contains(spec.inlineLong, o.name[2:]))
		if isInline {
			t.add(askV(CategoryShell, fmt.Sprintf("%s %s runs code given on the command line, in a language the gate does not judge", c.name(), o.name)))
			return true
		}
	}
	if spec.module {
		if mods := optValues(opts, "-m"); len(mods) > 0 {
			mod := mods[0]
			if mod.valueIdx >= 0 && c.words[mod.valueIdx].known() && (mod.value == "pip" || mod.value == "pip3") {
				j.command(c.from(mod.valueIdx), t)
				f.needPattern, f.checkArgs = false, false
			}
			return true
		}
	}
	if len(operands) == 0 {
		t.add(askV(CategoryShell, c.name()+" reads its program from its input, which the gate cannot see"))
		return true
	}
	if first := c.words[operands[0]]; first.known() && first.value == "-" {
		t.add(askV(CategoryShell, c.name()+" - reads its program from its input, which the gate cannot see"))
		return true
	}
	if spec.subcommand {
		if sub := c.words[operands[0]]; sub.known() && (sub.value == "eval" || sub.value == "repl") {
			t.add(askV(CategoryShell, fmt.Sprintf("%s %s runs code the gate does not judge", c.name(), sub.value)))
			return true
		}
		if j.network(c, f, t) {
			return true
		}
	}
	return true
}
