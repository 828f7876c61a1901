package gate

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// redirs judges the redirections of one statement.
func (j *judge) redirs(list []*syntax.Redirect, t *tally) {
	for _, r := range list {
		j.redirect(r, t)
	}
}

func (j *judge) redirect(r *syntax.Redirect, t *tally) {
	if r.N != nil && strings.Contains(r.N.Value, "[") {
		t.add(askV(CategoryShell, "a {name[index]} redirection evaluates an array index, which can run code"))
	}
	if r.Hdoc != nil {
		// A quoted delimiter leaves the body as one literal; otherwise
		// the body is expanded and its substitutions run.
		j.word(r.Hdoc, t)
	}
	w := j.word(r.Word, t)
	switch r.Op {
	case syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc:
		return // a delimiter or a string, not a file
	}
	if w.known() && (strings.HasPrefix(w.value, "/dev/tcp/") || strings.HasPrefix(w.value, "/dev/udp/")) {
		// bash opens a network connection for these names itself.
		if !j.g.policy.AllowNetwork {
			t.add(askV(CategoryNetwork, fmt.Sprintf("redirecting to %s opens a network connection, and the policy does not allow network access", w.value)))
		}
		return
	}
	switch r.Op {
	case syntax.DplIn, syntax.DplOut:
		if w.known() && (w.value == "-" || isDigits(w.value)) {
			return // duplicating or closing a descriptor touches no file
		}
		if r.Op == syntax.DplIn {
			j.readArg(w, r.Word, j.cwds, t)
			return
		}
		// >&word with a word that is not a descriptor writes a file.
	case syntax.RdrIn:
		j.readArg(w, r.Word, j.cwds, t)
		return
	}
	j.editArg(w, r.Word, j.cwds, t)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// readArg judges a word naming a file the command reads.
func (j *judge) readArg(w word, node *syntax.Word, cwds cwdSet, t *tally) {
	switch {
	case !w.static:
		t.add(askV(CategoryRead, fmt.Sprintf("%s is only known when the command runs, so the gate cannot check which file it names", shown(node, j))))
	case w.brace || w.extglob:
		t.add(askV(CategoryRead, fmt.Sprintf("%s expands to file names the gate does not work out (brace expansion or extended glob)", shown(node, j))))
	case w.glob:
		j.patternArg(w, node, cwds, t)
	case w.value == "" || w.value == "-":
	default:
		t.concern(j.g.readPath(w.value, cwds))
	}
}

// patternArg checks the directory a glob expands in: the part before
// the first wildcard, since a wildcard never matches a "/". The file
// names it matches are not known, so a pattern that climbs out with ".."
// is asked.
func (j *judge) patternArg(w word, node *syntax.Word, cwds cwdSet, t *tally) {
	if strings.Contains(w.value, "..") {
		t.add(askV(CategoryRead, fmt.Sprintf("the pattern %s contains \"..\"", shown(node, j))))
		return
	}
	prefix := w.value
	if i := strings.IndexAny(prefix, "*?["); i >= 0 {
		prefix = prefix[:i]
	}
	dir := "."
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		dir = prefix[:i+1]
	}
	t.concern(j.g.readPath(dir, cwds))
}

// editArg judges a word naming a file the command writes.
func (j *judge) editArg(w word, node *syntax.Word, cwds cwdSet, t *tally) {
	switch {
	case j.g.mode == ModeReadonly && !(w.known() && harmlessDevice(w.value)):
		t.add(denyV(CategoryEdit, fmt.Sprintf("readonly mode allows no edits (of %s)", shown(node, j))))
	case !w.known():
		t.add(askV(CategoryEdit, fmt.Sprintf("the command writes %s, which is only known when it runs", shown(node, j))))
	default:
		t.add(j.g.editPath(w.value, cwds))
	}
}
