package gate

import (
	"path/filepath"
	"slices"

	"mvdan.cc/sh/v3/syntax"
)

// The gate follows cd, pushd and popd through a script, because a
// relative path means a different file after them ("cd /etc && cat
// passwd"). It tracks the set of directories the shell may be in at each
// point, erring towards more:
//
//   - After a cd in a list, the shell is in the old directories or the
//     new one (the cd may fail): the set grows.
//   - In "cd dir && cmd", cmd runs only if cd succeeded: it runs in dir.
//   - Subshells, pipeline elements and substitutions do not move the
//     shell they came from.
//   - In a loop, every cd of the body counts from the first iteration.
//   - A cd to a directory the gate cannot compute ("cd $X", "cd -")
//     makes every later relative path unknown, and asked.

// binary judges "a && b", "a || b" and pipelines.
func (j *judge) binary(c *syntax.BinaryCmd) {
	switch c.Op {
	case syntax.AndStmt:
		j.stmt(c.X)
		afterX := j.cwds
		if j.ok != nil {
			j.cwds = *j.ok // b runs only if a succeeded
		}
		j.stmt(c.Y)
		okY := j.cwds
		if j.ok != nil {
			okY = *j.ok
		}
		j.cwds = unionCwds(afterX, j.cwds)
		j.ok = &okY
	case syntax.OrStmt:
		j.stmt(c.X)
		j.stmt(c.Y)
		j.ok = nil
	default: // | and |&: every element runs in a subshell
		j.subshell(func() { j.stmt(c.X) })
		j.subshell(func() { j.stmt(c.Y) })
		j.ok = nil
	}
}

// subshell judges code whose directory changes stay inside it.
func (j *judge) subshell(judgeInside func()) {
	saved := j.cwds
	judgeInside()
	j.cwds = saved
	j.ok = nil
}

// loop adds, before a loop body is judged, every directory a cd inside
// the loop can reach, since a later iteration starts where an earlier
// one went.
func (j *judge) loop(n syntax.Node) {
	j.cwds = j.g.reachableDirs(n, j.cwds)
}

// afterCd updates the directory set after a simple command, if it is a
// cd, pushd or popd (possibly behind builtin or command).
func (j *judge) afterCd(c cmdLine) {
	words := c.words
	for len(words) > 0 && words[0].known() && (words[0].value == "builtin" || words[0].value == "command") {
		words = words[1:]
	}
	if len(words) == 0 || !words[0].known() {
		return
	}
	name := words[0].value
	switch name {
	case "cd", "pushd", "popd":
	default:
		return
	}
	j.changesDir = true
	next := j.g.cdDestination(name, words[1:], c.cwds, unionCwds(j.visited, j.cwds))
	j.cwds = unionCwds(j.cwds, next)
	j.visited = unionCwds(j.visited, next)
	j.ok = &next
}

// cdDestination computes where cd, pushd or popd with args leads from
// the directories in from.
func (g *Gate) cdDestination(name string, args []word, from, seen cwdSet) cwdSet {
	if name == "popd" {
		return seen
	}
	var dir *word
	for i := range args {
		a := args[i]
		if a.known() && len(a.value) > 1 && a.value[0] == '-' && !isDigits(a.value[1:]) {
			continue // an option such as -P
		}
		dir = &args[i]
		break
	}
	switch {
	case dir == nil && name == "pushd":
		return seen // swaps the top two directories
	case dir == nil:
		if g.home == "" {
			return cwdSet{unknown: true}
		}
		return g.cdTo(g.home, from)
	case !dir.known() || dir.value == "-":
		return cwdSet{unknown: true}
	case name == "pushd" && (dir.value[0] == '+' || dir.value[0] == '-'):
		return seen // rotates the stack
	}
	return g.cdTo(dir.value, from)
}

// cdTo resolves a cd target from each directory in from.
func (g *Gate) cdTo(target string, from cwdSet) cwdSet {
	if filepath.IsAbs(target) {
		real, err := realPath(target)
		if err != nil {
			return cwdSet{unknown: true}
		}
		return cwdSet{dirs: []string{real}}
	}
	if from.unknown {
		return cwdSet{unknown: true}
	}
	var out cwdSet
	for _, dir := range from.dirs {
		real, err := realPathFrom(dir, target)
		if err != nil {
			return cwdSet{unknown: true}
		}
		if !slices.Contains(out.dirs, real) {
			out.dirs = append(out.dirs, real)
		}
	}
	return out
}

func unionCwds(a, b cwdSet) cwdSet {
	out := cwdSet{dirs: slices.Clone(a.dirs), unknown: a.unknown || b.unknown}
	for _, d := range b.dirs {
		if !slices.Contains(out.dirs, d) {
			out.dirs = append(out.dirs, d)
		}
	}
	if len(out.dirs) > maxCwds {
		out = cwdSet{unknown: true}
	}
	return out
}

// reachableDirs returns base plus every directory the cd, pushd and
// popd commands inside n can reach from it, in any order and any number
// of times.
func (g *Gate) reachableDirs(n syntax.Node, base cwdSet) cwdSet {
	var cds [][]word
	syntax.Walk(n, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst, *syntax.ProcSubst, *syntax.Subshell:
			return false // their cds stay inside them
		case *syntax.CallExpr:
			words := make([]word, len(n.Args))
			for i, a := range n.Args {
				words[i] = evalWord(a, g.home)
			}
			for len(words) > 0 && words[0].known() && (words[0].value == "builtin" || words[0].value == "command") {
				words = words[1:]
			}
			if len(words) > 0 && words[0].known() {
				switch words[0].value {
				case "cd", "pushd", "popd":
					cds = append(cds, words)
				}
			}
		}
		return true
	})
	set := base
	for round := 0; round <= len(cds); round++ {
		before := len(set.dirs)
		for _, words := range cds {
			set = unionCwds(set, g.cdDestination(words[0].value, words[1:], set, set))
			if set.unknown {
				return set
			}
		}
		if len(set.dirs) == before {
			break
		}
	}
	return set
}
