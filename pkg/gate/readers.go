package gate

import (
	"slices"
	"strings"
)

// reader judges the commands the gate knows only read, given the option
// checks below: their option values are claimed (so a pattern such as
// "grep -e /" is not mistaken for a file), options naming files are
// judged as reads, and the few options that write or run programs are
// caught. Commands the gate does not know at all pass through untouched:
// they need a pattern and, in readonly mode, a human.
func (j *judge) reader(c cmdLine, f *facts, t *tally) {
	key := c.key()
	if !readOnlyCommand(key) {
		return
	}
	f.readOnly = true
	if key == "jq" {
		j.jq(c, f, t)
		return
	}
	spec, fileOpts := readerOptions(key)
	opts, operands, ok := scanOpts(c.words, 1, spec)
	if !ok {
		t.add(askV(CategoryShell, c.name()+" is missing an option's value"))
		return
	}
	for _, o := range opts {
		if !o.hasValue {
			continue
		}
		f.claim(o.valueIdx)
		if slices.Contains(fileOpts, o.name) {
			w, node := c.valueWord(o)
			j.readArg(w, node, c.cwds, t)
		}
	}
	switch key {
	case "grep", "egrep", "fgrep", "rg":
		// The first operand is the pattern, unless -e or -f gave one.
		if len(operands) > 0 && !hasOpt(opts, "-e", "--regexp", "-f", "--file") {
			f.claim(operands[0])
		}
		if key == "rg" && hasOpt(opts, "--pre") {
			t.add(askV(CategoryShell, "rg --pre runs a program on every file it searches"))
		}
	case "sort":
		if hasOpt(opts, "--compress-program") {
			t.add(askV(CategoryShell, "sort --compress-program runs a program"))
		}
		j.optionEdits(c, f, t, opts, "sort writes its output to a file", "-o", "--output")
	case "tree":
		j.optionEdits(c, f, t, opts, "tree -o writes its output to a file", "-o")
	case "uniq":
		if len(operands) >= 2 {
			f.writes = "uniq writes its second operand"
			f.claim(operands[1])
			j.editArg(c.words[operands[1]], c.nodes[operands[1]], c.cwds, t)
		}
	case "date":
		if hasOpt(opts, "-s", "--set") {
			t.add(askV(CategoryShell, "date --set changes the system clock"))
		}
	case "file":
		if hasOpt(opts, "-C", "--compile") {
			f.writes = "file -C writes a compiled magic file"
			t.add(askV(CategoryEdit, "file -C writes a compiled magic file next to its input"))
		}
	}
}

// readerOptions gives, for a read-only command, its options that take a
// value and which of those name a file to read.
func readerOptions(key string) (optSpec, []string) {
	switch key {
	case "cut":
		return optSpec{short: "bcdf", long: []string{"bytes", "characters", "delimiter", "fields", "output-delimiter"}}, nil
	case "head", "tail":
		return optSpec{short: "nc", long: []string{"lines", "bytes", "pid", "sleep-interval", "max-unchanged-stats"}}, nil
	case "grep", "egrep", "fgrep":
		return optSpec{short: "efmABCdD", long: []string{"regexp", "file", "max-count", "after-context", "before-context",
			"context", "include", "exclude", "exclude-dir", "label", "binary-files", "devices", "directories", "exclude-from"}}, []string{"-f", "--file", "--exclude-from"}
	case "rg":
		return optSpec{short: "efgtTmABCjMrE", long: []string{"regexp", "file", "glob", "iglob", "type", "type-not", "max-count",
			"after-context", "before-context", "context", "threads", "max-columns", "replace", "encoding", "type-add",
			"max-depth", "ignore-file", "pre", "pre-glob", "sort", "sortr", "color", "colors", "path-separator"}}, []string{"-f", "--file", "--ignore-file"}
	case "ls":
		return optSpec{short: "IwT", long: []string{"ignore", "hide", "width", "tabsize", "format", "sort", "time", "time-style", "block-size", "quoting-style", "indicator-style"}}, nil
	case "diff":
		return optSpec{short: "xXICFUWLS", long: []string{"exclude", "exclude-from", "ignore-matching-lines", "show-function-line",
			"context", "unified", "width", "label", "starting-file", "tabsize", "horizon-lines", "from-file", "to-file", "color", "palette"}}, []string{"-X", "--exclude-from", "--from-file", "--to-file"}
	case "du":
		return optSpec{short: "dXBt", long: []string{"max-depth", "exclude", "exclude-from", "block-size", "threshold", "time-style", "files0-from"}}, []string{"-X", "--exclude-from", "--files0-from"}
	case "wc":
		return optSpec{long: []string{"files0-from"}}, []string{"--files0-from"}
	case "od":
		return optSpec{short: "AjNstw", long: []string{"address-radix", "skip-bytes", "read-bytes", "strings", "format", "width"}}, nil
	case "hexdump":
		return optSpec{short: "enNsf"}, []string{"-f"}
	case "stat":
		return optSpec{short: "c", long: []string{"format", "printf"}}, nil
	case "file":
		return optSpec{short: "mfFP", long: []string{"magic-file", "files-from", "separator", "parameter"}}, []string{"-m", "-f", "--magic-file", "--files-from"}
	case "date":
		return optSpec{short: "dfrs", long: []string{"date", "file", "reference", "set"}}, []string{"-f", "-r", "--file", "--reference"}
	case "base64":
		return optSpec{short: "w", long: []string{"wrap"}}, nil
	case "column":
		return optSpec{short: "sco", long: []string{"separator", "output-separator", "output-width"}}, nil
	case "nl":
		return optSpec{short: "bdfhilnsvw"}, nil
	case "cmp":
		return optSpec{short: "in", long: []string{"ignore-initial", "bytes"}}, nil
	case "comm":
		return optSpec{long: []string{"output-delimiter"}}, nil
	case "tac":
		return optSpec{short: "s", long: []string{"separator"}}, nil
	case "sort":
		return optSpec{short: "koStT", long: []string{"key", "output", "field-separator", "temporary-directory", "buffer-size",
			"compress-program", "parallel", "files0-from", "batch-size", "random-source", "sort"}}, []string{"--files0-from", "--random-source"}
	case "tree":
		return optSpec{short: "oLPIH", long: []string{"filelimit", "timefmt", "charset", "sort", "fromfile"}}, nil
	case "uniq":
		return optSpec{short: "fsw", long: []string{"skip-fields", "skip-chars", "check-chars", "group", "all-repeated"}}, nil
	}
	return optSpec{}, nil
}

// jq takes a filter and files, and options with one or two values; the
// ones naming files are reads.
func (j *judge) jq(c cmdLine, f *facts, t *tally) {
	filterGiven := false
	for i := 1; i < len(c.words); i++ {
		w := c.words[i]
		if !w.known() {
			continue
		}
		switch w.value {
		case "--arg", "--argjson":
			f.claim(i+1, i+2)
			i += 2
		case "--slurpfile", "--rawfile":
			f.claim(i+1, i+2)
			if i+2 < len(c.words) {
				j.readArg(c.words[i+2], c.nodes[i+2], c.cwds, t)
			}
			i += 2
		case "-f", "--from-file":
			filterGiven = true
			if i+1 < len(c.words) {
				f.claim(i + 1)
				j.readArg(c.words[i+1], c.nodes[i+1], c.cwds, t)
			}
			i++
		case "-L", "--indent", "--tab":
			if w.value != "--tab" {
				f.claim(i + 1)
				i++
			}
		case "--args", "--jsonargs":
			for k := i + 1; k < len(c.words); k++ {
				f.claim(k) // positional values, not files
			}
			return
		default:
			if !filterGiven && !strings.HasPrefix(w.value, "-") {
				filterGiven = true
				f.claim(i)
			}
		}
	}
}

// claimOptValues marks option values as judged: they are keys, sizes
// and formats, not files, and file-valued ones are judged by the caller.
func (j *judge) claimOptValues(f *facts, opts []option) {
	for _, o := range opts {
		f.claim(o.valueIdx)
	}
}

// optionEdits judges the values of options naming an output file.
func (j *judge) optionEdits(c cmdLine, f *facts, t *tally, opts []option, why string, names ...string) {
	for _, o := range optValues(opts, names...) {
		f.writes = why
		f.claim(o.valueIdx)
		w, node := c.valueWord(o)
		j.editArg(w, node, c.cwds, t)
	}
}

// readOnlyCommand lists the commands the gate knows only read (given the
// option checks in reader), which readonly mode therefore runs when the
// allowlist has them. The built-in allowlist is made of these.
func readOnlyCommand(key string) bool {
	switch key {
	case "ls", "pwd", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg",
		"tree", "stat", "file", "du", "df", "echo", "printf", "true", "false", "test", "[",
		"which", "type", "basename", "dirname", "realpath", "readlink", "sort", "uniq",
		"cut", "tr", "diff", "cmp", "comm", "column", "nl", "tac", "rev", "od", "hexdump",
		"md5sum", "sha1sum", "sha256sum", "sha512sum", "shasum", "base64", "jq", "seq",
		"date", "uname", "whoami", "id", "sleep", "nproc", "expr":
		return true
	}
	return false
}
