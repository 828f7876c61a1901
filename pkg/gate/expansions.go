package gate

import (
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// word evaluates a word and records what about it needs a human:
// substitutions (whose commands are judged as parts of their own) and
// expansions that can run code.
func (j *judge) word(w *syntax.Word, t *tally) word {
	ev := evalWord(w, j.g.home)
	j.noteExpansions(ev, t)
	return ev
}

// expansions inspects any node (an arithmetic command, an index) for
// substitutions and code-running expansions.
func (j *judge) expansions(n syntax.Node, t *tally) {
	var ev word
	inspectExpansions(n, &ev)
	j.noteExpansions(ev, t)
}

func (j *judge) noteExpansions(ev word, t *tally) {
	if ev.subst {
		t.add(askV(CategoryShell, "it contains a command or process substitution, which is never allowed without asking"))
		for _, stmts := range ev.nested {
			j.subshell(func() { j.stmts(stmts) })
		}
	}
	if ev.unsafe != "" {
		t.add(askV(CategoryShell, ev.unsafe))
	}
}

// arithmetic asks for arithmetic that reads variables: bash evaluates a
// variable's value as an expression there, and a value such as
// 'a[$(cmd)]' runs cmd.
func (j *judge) arithmetic(x syntax.ArithmExpr, t *tally) {
	if arithmIsConstant(x) {
		t.add(allowV(CategoryShell, "constant arithmetic"))
		return
	}
	t.add(askV(CategoryShell, "arithmetic on variables can run code hidden in their values"))
}

// testClause judges [[ ... ]].
func (j *judge) testClause(c *syntax.TestClause) tally {
	var t tally
	j.expansions(c, &t)
	syntax.Walk(c.X, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.UnaryTest:
			if x.Op == syntax.TsVarSet || x.Op == syntax.TsRefVar {
				t.add(askV(CategoryShell, "[[ -v ]] evaluates array subscripts, which can run code"))
			}
		case *syntax.BinaryTest:
			switch x.Op {
			case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
				if !testOperandNumeric(x.X) || !testOperandNumeric(x.Y) {
					t.add(askV(CategoryShell, "[[ ]] arithmetic comparisons evaluate variables as expressions, which can run code"))
				}
			}
		case *syntax.Word:
			return false
		}
		return true
	})
	t.addIfEmpty(allowV(CategoryShell, "a test expression"))
	return t
}

// testOperandNumeric accepts number literals and the special parameters
// that always hold numbers ($#, $?, $$, $!, $1...).
func testOperandNumeric(x syntax.TestExpr) bool {
	w, ok := x.(*syntax.Word)
	if !ok || len(w.Parts) != 1 {
		return false
	}
	switch p := w.Parts[0].(type) {
	case *syntax.Lit:
		return isNumericLiteral(p.Value)
	case *syntax.ParamExp:
		return p.Short && p.Param != nil && strings.Contains("#?$!", p.Param.Value) && len(p.Param.Value) == 1
	}
	return false
}

// declClause judges declare, local, export, readonly, typeset and
// nameref.
func (j *judge) declClause(c *syntax.DeclClause) tally {
	var t tally
	variant := c.Variant.Value
	named := false
	for _, a := range c.Args {
		named = named || a.Name != nil
		if a.Naked && a.Name == nil {
			// A flag such as -x, or a word whose value is not known.
			w := j.word(a.Value, &t)
			if !w.known() || !safeDeclFlag(w.value) {
				t.add(askV(CategoryShell, fmt.Sprintf("%s %s is not a flag the gate knows to be harmless", variant, shown(a.Value, j))))
			}
			continue
		}
		j.assign(a, variant, &t)
	}
	if !named {
		t.add(askV(CategoryShell, variant+" without names prints variables, which may include secrets"))
	}
	t.addIfEmpty(allowV(CategoryShell, variant+" of harmless variables"))
	return t
}

// safeDeclFlag accepts declare flags that neither make later assignments
// arithmetic (-i) nor make names refer to other names (-n).
func safeDeclFlag(flag string) bool {
	if len(flag) < 2 || (flag[0] != '-' && flag[0] != '+') {
		return false
	}
	for _, c := range flag[1:] {
		if !strings.ContainsRune("xrglupfFaA", c) {
			return false
		}
	}
	return true
}

// assign judges one variable assignment: its value and index, and its
// name, since some variables change what later commands run.
func (j *judge) assign(a *syntax.Assign, context string, t *tally) {
	if a.Name == nil {
		return
	}
	if a.Index != nil {
		j.expansions(a.Index, t)
		if !arithmIsConstant(a.Index) {
			t.add(askV(CategoryShell, "an array index is arithmetic that can run code hidden in a variable's value"))
		}
	}
	if a.Value != nil {
		j.word(a.Value, t)
	}
	if a.Array != nil {
		j.expansions(a.Array, t)
		for _, elem := range a.Array.Elems {
			if elem.Index != nil && !arithmIsConstant(elem.Index) {
				t.add(askV(CategoryShell, "an array index is arithmetic that can run code hidden in a variable's value"))
			}
		}
	}
	if !safeVarName(a.Name.Value) {
		t.add(askV(CategoryShell, fmt.Sprintf("%s sets %s, which can change what later commands run", context, a.Name.Value)))
	}
}
