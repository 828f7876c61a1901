package gate

import (
	"fmt"
	"strings"
)

// goTool judges the go command by subcommand: the ones that download
// (get, mod download/tidy, install or run of pkg@version) reach the
// network, build flags that name another program (-toolexec, -exec,
// -vettool) are asked, and output files are edits.
func (j *judge) goTool(c cmdLine, f *facts, t *tally) {
	i := 1
	if i+1 < len(c.words) && c.words[i].known() && c.words[i].value == "-C" {
		f.claim(i, i+1)
		if !j.chdirForArgs(c, f, t, i+1) {
			return
		}
		c.cwds = *f.argCwds
		i += 2
	}
	if i >= len(c.words) || !c.words[i].known() {
		f.readOnly = i >= len(c.words)
		return
	}
	sub := c.words[i].value
	f.claim(i)
	f.matchWords = append([]word{c.words[0]}, c.words[i:]...)
	args := i + 1
	for k := args; k < len(c.words); k++ {
		w := c.words[k]
		if !w.known() || !strings.HasPrefix(w.value, "-") {
			continue
		}
		flag := strings.TrimPrefix(strings.TrimPrefix(w.value, "-"), "-")
		name, value, attached := strings.Cut(flag, "=")
		switch name {
		case "toolexec", "exec", "vettool":
			t.add(askV(CategoryShell, fmt.Sprintf("go %s -%s runs the program it names", sub, name)))
		case "o", "modfile":
			f.claim(k)
			target := word{value: value, static: true}
			node := c.nodes[k]
			if !attached {
				if k+1 >= len(c.words) {
					continue
				}
				k++
				f.claim(k)
				target, node = c.words[k], c.nodes[k]
			}
			f.writes = fmt.Sprintf("go %s -%s writes a file", sub, name)
			j.editArg(target, node, c.cwds, t)
		}
	}
	next, _ := subcommand(c.from(i))
	hasVersion := false
	for _, w := range c.words[args:] {
		if w.known() && !strings.HasPrefix(w.value, "-") && strings.Contains(w.value, "@") {
			hasVersion = true
		}
	}
	switch {
	case sub == "version" || sub == "doc" || sub == "vet" || (sub == "list" && !hasFlag(c, args, "-u")):
		f.readOnly = true
	case sub == "env":
		if hasFlag(c, args, "-w") || hasFlag(c, args, "-u") {
			f.writes = "go env -w changes Go's settings file"
			t.add(askV(CategoryEdit, "go env -w/-u changes Go's settings for every later build, outside the worktree"))
			return
		}
		f.readOnly = true
	case sub == "get" || (sub == "mod" && (next == "download" || next == "tidy")) ||
		((sub == "install" || sub == "run") && hasVersion) || sub == "list":
		f.writes = "go " + sub + " changes modules"
		if sub == "list" {
			f.writes = ""
		}
		if !j.g.policy.AllowNetwork {
			t.add(askV(CategoryNetwork, fmt.Sprintf("go %s downloads modules, and the policy does not allow network access", sub)))
		}
	case sub == "install":
		f.writes = "go install writes binaries"
		t.add(askV(CategoryEdit, "go install writes binaries into GOBIN, outside the worktree"))
	case sub == "clean" && (hasFlag(c, args, "-cache") || hasFlag(c, args, "-modcache") || hasFlag(c, args, "-testcache") || hasFlag(c, args, "-fuzzcache")):
		f.writes = "go clean removes caches"
		t.add(askV(CategoryEdit, "go clean removes Go's caches, outside the worktree"))
	case sub == "build" || sub == "fmt" || sub == "fix" || sub == "generate" || sub == "mod" || sub == "work" || sub == "clean":
		f.writes = fmt.Sprintf("go %s writes files", sub)
	}
}

// hasFlag reports whether a word from start on is exactly flag.
func hasFlag(c cmdLine, start int, flag string) bool {
	for _, w := range c.words[start:] {
		if w.known() && w.value == flag {
			return true
		}
	}
	return false
}
