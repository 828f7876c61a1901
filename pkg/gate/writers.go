package gate

import (
	"fmt"
	"strings"
)

// writer judges the commands whose job is writing files: their targets
// are edits, judged like an edit tool's (allowed inside the worktree,
// asked outside it or for a sensitive path, denied in readonly mode),
// and their sources are reads. They still need an allow pattern. It
// returns false when c is not one of them.
func (j *judge) writer(c cmdLine, f *facts, t *tally) bool {
	key := c.key()
	switch key {
	case "rm", "rmdir", "unlink", "shred", "touch", "mkdir", "truncate", "tee":
		spec := optSpec{}
		switch key {
		case "shred":
			spec = optSpec{short: "ns", long: []string{"iterations", "size", "random-source"}}
		case "touch":
			spec = optSpec{short: "dtr", long: []string{"date", "reference", "time"}}
		case "mkdir":
			spec = optSpec{short: "m", long: []string{"mode"}}
		case "truncate":
			spec = optSpec{short: "sr", long: []string{"size", "reference"}}
		}
		opts, operands, ok := j.writerOpts(c, t, spec)
		if !ok {
			return true
		}
		for _, o := range optValues(opts, "-r", "--reference") {
			w, node := c.valueWord(o)
			j.readArg(w, node, c.cwds, t)
		}
		j.claimOptValues(f, opts)
		j.edits(c, f, t, operands)
		f.writes = fmt.Sprintf("%s writes files", c.name())
	case "mv", "cp", "ln", "install":
		j.copyLike(c, f, t)
	case "chmod", "chown", "chgrp":
		j.modeChange(c, f, t)
	case "dd":
		f.writes = "dd writes files"
		for i := 1; i < len(c.words); i++ {
			w := c.words[i]
			f.claim(i)
			switch {
			case w.known() && strings.HasPrefix(w.value, "of="):
				j.editArg(word{value: w.value[3:], static: true}, c.nodes[i], c.cwds, t)
			case w.known() && strings.HasPrefix(w.value, "if="):
				j.readArg(word{value: w.value[3:], static: true}, c.nodes[i], c.cwds, t)
			case !w.known():
				t.add(askV(CategoryShell, fmt.Sprintf("the dd operand %s is only known when it runs", shown(c.nodes[i], j))))
			}
		}
	case "xxd":
		opts, operands, ok := j.writerOpts(c, t, optSpec{short: "cglosn", long: []string{"cols", "groupsize", "len", "offset", "seek", "name"}})
		if !ok {
			return true
		}
		j.claimOptValues(f, opts)
		f.readOnly = len(operands) < 2
		if len(operands) >= 2 {
			f.writes = "xxd writes its second operand"
			j.edits(c, f, t, operands[1:2])
		}
	case "patch":
		j.patch(c, f, t)
	case "gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4":
		opts, operands, ok := j.writerOpts(c, t, optSpec{short: "So", long: []string{"suffix"}})
		if !ok {
			return true
		}
		j.claimOptValues(f, opts)
		if hasOpt(opts, "-c", "--stdout", "--to-stdout", "-l", "--list", "-t", "--test") {
			f.readOnly = true
			return true
		}
		f.writes = c.name() + " replaces files with their (de)compressed form"
		if len(operands) == 0 {
			f.readOnly, f.writes = true, "" // a filter from input to output
			return true
		}
		j.edits(c, f, t, operands)
	case "unzip":
		opts, operands, ok := j.writerOpts(c, t, optSpec{short: "dxP"})
		if !ok {
			return true
		}
		j.claimOptValues(f, opts)
		if hasOpt(opts, "-l", "-t", "-v", "-Z", "-p", "-z") {
			f.readOnly = true
			return true
		}
		f.writes = "unzip extracts files"
		f.claim(operands[min(1, len(operands)):]...) // member names, not paths
		if dirs := optValues(opts, "-d"); len(dirs) > 0 {
			w, node := c.valueWord(dirs[0])
			j.editArg(w, node, c.cwds, t)
		} else {
			t.add(j.g.editPath(".", c.cwds))
		}
	case "tar":
		j.tar(c, f, t)
	default:
		return false
	}
	return true
}

// writerOpts scans a writer's options, asking when one lacks its value.
func (j *judge) writerOpts(c cmdLine, t *tally, spec optSpec) ([]option, []int, bool) {
	opts, operands, ok := scanOpts(c.words, 1, spec)
	if !ok {
		t.add(askV(CategoryShell, c.name()+" is missing an option's value"))
	}
	return opts, operands, ok
}

// edits judges the words at idx as files written.
func (j *judge) edits(c cmdLine, f *facts, t *tally, idx []int) {
	for _, i := range idx {
		f.claim(i)
		j.editArg(c.words[i], c.nodes[i], c.cwds, t)
	}
}

// copyLike judges mv, cp, ln and install: the destination (the last
// operand, or -t DIR) is written; mv also removes its sources, the
// others read them.
func (j *judge) copyLike(c cmdLine, f *facts, t *tally) {
	key := c.key()
	spec := optSpec{short: "tS", long: []string{"target-directory", "suffix"}}
	if key == "install" {
		spec = optSpec{short: "tSmog", long: []string{"target-directory", "suffix", "mode", "owner", "group", "strip-program"}}
	}
	opts, operands, ok := j.writerOpts(c, t, spec)
	if !ok {
		return
	}
	j.claimOptValues(f, opts)
	f.writes = fmt.Sprintf("%s writes files", c.name())
	if hasOpt(opts, "--strip-program") {
		t.add(askV(CategoryShell, "install --strip-program runs a program"))
	}
	var dest []int
	sources := operands
	if dirs := optValues(opts, "-t", "--target-directory"); len(dirs) > 0 {
		for _, d := range dirs {
			w, node := c.valueWord(d)
			j.editArg(w, node, c.cwds, t)
		}
	} else if key == "install" && hasOpt(opts, "-d", "--directory") {
		dest, sources = operands, nil
	} else if len(operands) > 0 {
		dest, sources = operands[len(operands)-1:], operands[:len(operands)-1]
	}
	if len(operands) == 0 {
		t.add(askV(CategoryShell, c.name()+" without operands"))
		return
	}
	j.edits(c, f, t, dest)
	if key == "mv" {
		j.edits(c, f, t, sources)
		return
	}
	// Link targets and copy sources are read (a link pointing outside
	// the worktree would let later commands reach outside through it).
	for _, i := range sources {
		f.claim(i)
		j.readArg(c.words[i], c.nodes[i], c.cwds, t)
	}
}

// modeChange judges chmod, chown and chgrp: the first operand is the
// mode or owner (unless --reference names a file), the rest are edited.
func (j *judge) modeChange(c cmdLine, f *facts, t *tally) {
	f.writes = fmt.Sprintf("%s changes file attributes", c.name())
	var operands []int
	reference := false
	for i := 1; i < len(c.words); i++ {
		w := c.words[i]
		switch {
		case !w.known():
			operands = append(operands, i)
		case strings.HasPrefix(w.value, "--reference="):
			reference = true
			f.claim(i)
			j.readArg(word{value: strings.TrimPrefix(w.value, "--reference="), static: true}, c.nodes[i], c.cwds, t)
		case strings.HasPrefix(w.value, "--") || (c.key() != "chmod" && strings.HasPrefix(w.value, "-")):
			f.claim(i)
		case c.key() == "chmod" && len(w.value) == 2 && strings.ContainsRune("RvcfHLP", rune(w.value[1])) && w.value[0] == '-':
			f.claim(i) // an option; "-x" and "-w" are modes
		default:
			operands = append(operands, i)
		}
	}
	if !reference && len(operands) > 0 {
		f.claim(operands[0])
		operands = operands[1:]
	}
	if len(operands) == 0 {
		t.add(askV(CategoryShell, c.name()+" without files"))
		return
	}
	j.edits(c, f, t, operands)
}

// patch edits the file it is given, or the files the patch itself
// names, which the gate does not read.
func (j *judge) patch(c cmdLine, f *facts, t *tally) {
	opts, operands, ok := j.writerOpts(c, t, optSpec{short: "iopBdDFrVYzxgL", long: []string{"input", "output", "strip", "prefix", "directory", "ifdef", "fuzz", "reject-file", "version-control", "basename-prefix", "suffix", "get"}})
	if !ok {
		return
	}
	j.claimOptValues(f, opts)
	f.writes = "patch edits files"
	if hasOpt(opts, "-d", "--directory") {
		t.add(askV(CategoryEdit, "patch -d changes the directory the patch applies in"))
	}
	for _, o := range optValues(opts, "-i", "--input") {
		w, node := c.valueWord(o)
		j.readArg(w, node, c.cwds, t)
	}
	for _, o := range optValues(opts, "-o", "--output", "-r", "--reject-file") {
		w, node := c.valueWord(o)
		j.editArg(w, node, c.cwds, t)
	}
	if hasOpt(opts, "--dry-run", "-C", "--check") {
		f.readOnly, f.writes = true, ""
		return
	}
	if len(operands) == 0 {
		if j.g.mode != ModeReadonly {
			t.add(askV(CategoryEdit, "patch edits the files named inside the patch, which the gate does not read"))
		}
		return
	}
	j.edits(c, f, t, operands[:1])
	if len(operands) > 1 {
		f.claim(operands[1])
		j.readArg(c.words[operands[1]], c.nodes[operands[1]], c.cwds, t)
	}
}

// tar lists, creates or extracts. Extraction writes whatever paths the
// archive holds, .git included, so it is always asked.
func (j *judge) tar(c cmdLine, f *facts, t *tally) {
	mode := ""
	for i, w := range c.words[1:] {
		if !w.known() {
			continue
		}
		v := w.value
		switch {
		case strings.HasPrefix(v, "--to-command") || strings.HasPrefix(v, "--use-compress-program") ||
			strings.HasPrefix(v, "--checkpoint-action") || strings.HasPrefix(v, "--info-script") ||
			strings.HasPrefix(v, "--new-volume-script") || v == "-I" || v == "-F":
			t.add(askV(CategoryShell, "tar "+v+" runs a program"))
			return
		case v == "--extract" || v == "--get":
			mode = "x"
		case v == "--create" || v == "--append" || v == "--update" || v == "--concatenate":
			mode = "c"
		case v == "--list":
			mode = "t"
		case strings.HasPrefix(v, "--"):
		case (i == 0 || strings.HasPrefix(v, "-")) && mode == "":
			letters := strings.TrimPrefix(v, "-")
			switch {
			case strings.ContainsAny(letters, "x"):
				mode = "x"
			case strings.ContainsAny(letters, "cruA"):
				mode = "c"
			case strings.ContainsAny(letters, "t"):
				mode = "t"
			}
		}
	}
	switch mode {
	case "t":
		f.readOnly = true
	case "x":
		f.writes = "tar extracts files"
		if j.g.mode != ModeReadonly {
			t.add(askV(CategoryEdit, "tar extracts the paths stored in the archive, which the gate does not read"))
		}
	case "c":
		f.writes = "tar writes an archive"
		if j.g.mode != ModeReadonly {
			t.add(askV(CategoryEdit, "tar writes an archive whose name the gate does not parse out of tar's options"))
		}
	default:
		t.add(askV(CategoryShell, "the gate cannot tell what this tar command does"))
	}
}
