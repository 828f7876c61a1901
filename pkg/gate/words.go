package gate

import (
	"strings"

	"github.com/corral-dev/corral/internal/proc"
	"mvdan.cc/sh/v3/syntax"
)

// word is what the gate knows statically about one shell word.
type word struct {
	// value is the word after tilde expansion and quote removal. It is
	// meaningful only when static is true.
	value string
	// static: no parameter, arithmetic or command expansion, and no
	// ANSI-C or locale quoting, took part, so value is what bash computes.
	static bool
	// glob: an unquoted *, ? or [ (or an extended glob) makes bash expand
	// the word into file names; value is then the pattern, not the result.
	glob bool
	// brace: an unquoted brace expansion such as {a,b} or {1..9}.
	brace bool
	// extglob: an extended glob such as @(a|b), whose pattern the gate
	// does not interpret.
	extglob bool
	// subst: a command or process substitution appears somewhere inside.
	subst bool
	// unsafe explains why expanding the word can run code even without a
	// substitution (arithmetic on variables, indirect expansion, @P), or
	// is empty.
	unsafe string
	// nested holds the statements of substitutions inside the word, so
	// they are judged too.
	nested [][]*syntax.Stmt
}

// known reports whether the word expands to exactly value, as one word.
func (w word) known() bool { return w.static && !w.glob && !w.brace }

// evalWord computes what can be known statically about w. home replaces
// a leading "~" or "~/".
func evalWord(w *syntax.Word, home string) word {
	var out word
	if w == nil {
		return word{static: true}
	}
	inspectExpansions(w, &out)
	out.brace = hasBraceExpansion(w)
	var b strings.Builder
	out.static = true
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			val := p.Value
			if i == 0 && strings.HasPrefix(val, "~") {
				rest, ok := expandTilde(val, home, len(w.Parts) == 1)
				if !ok {
					out.static = false
					continue
				}
				val = rest
				b.WriteString(home)
			}
			s, glob := unescapeUnquoted(val)
			out.glob = out.glob || glob
			b.WriteString(s)
		case *syntax.SglQuoted:
			if p.Dollar {
				out.static = false
				continue
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				out.static = false
				continue
			}
			for _, inner := range p.Parts {
				lit, ok := inner.(*syntax.Lit)
				if !ok {
					out.static = false
					continue
				}
				b.WriteString(unescapeDoubleQuoted(lit.Value))
			}
		case *syntax.ExtGlob:
			out.glob, out.extglob = true, true
			b.WriteString(p.Op.String())
			b.WriteString(p.Pattern.Value)
			b.WriteByte(')')
		default:
			out.static = false
		}
	}
	if out.static {
		out.value = b.String()
	}
	return out
}

// expandTilde handles a leading tilde in the first literal of a word. It
// returns the literal with the "~" prefix removed when the prefix means
// the home directory; "~user", "~+" and "~-" depend on the environment.
// A tilde followed by a quoted part ("~"'x') is also a login name.
func expandTilde(lit, home string, whole bool) (string, bool) {
	if home == "" {
		return "", false
	}
	if lit == "~" {
		return "", whole
	}
	if strings.HasPrefix(lit, "~/") {
		return lit[1:], true
	}
	return "", false
}

// unescapeUnquoted removes the backslashes of an unquoted literal, and
// reports whether an unescaped glob character remains.
func unescapeUnquoted(s string) (string, bool) {
	if !strings.ContainsAny(s, "\\*?[") {
		return s, false
	}
	var b strings.Builder
	glob := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s):
			i++
			if s[i] != '\n' {
				b.WriteByte(s[i])
			}
		case c == '*' || c == '?' || c == '[':
			glob = true
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), glob
}

// unescapeDoubleQuoted removes the backslashes bash removes inside double
// quotes: before $, `, ", \ and newline.
func unescapeDoubleQuoted(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				b.WriteByte(s[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// hasBraceExpansion reports whether bash would brace-expand w, as in
// {a,b} or {1..9} (but not {} or {x}). It asks the parser's own brace
// splitter, on a copy, since the splitter rewrites the word.
func hasBraceExpansion(w *syntax.Word) bool {
	hasBrace := false
	for _, p := range w.Parts {
		if lit, ok := p.(*syntax.Lit); ok && strings.Contains(lit.Value, "{") {
			hasBrace = true
			break
		}
	}
	if !hasBrace {
		return false
	}
	c := &syntax.Word{Parts: append([]syntax.WordPart(nil), w.Parts...)}
	syntax.SplitBraces(c)
	for _, p := range c.Parts {
		if _, ok := p.(*syntax.BraceExp); ok {
			return true
		}
	}
	return false
}

// inspectExpansions records substitutions, and expansions that can run
// code through bash's arithmetic evaluation of variable contents: a
// variable holding 'a[$(cmd)]' runs cmd when used in $((...)), in an
// array index or slice, or through ${!name}.
func inspectExpansions(node syntax.Node, out *word) {
	syntax.Walk(node, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.CmdSubst:
			out.subst = true
			out.nested = append(out.nested, n.Stmts)
			return false
		case *syntax.ProcSubst:
			out.subst = true
			out.nested = append(out.nested, n.Stmts)
			return false
		case *syntax.ArithmExp:
			if out.unsafe == "" && !arithmIsConstant(n.X) {
				out.unsafe = "arithmetic expansion on variables can run code hidden in their values"
			}
		case *syntax.ParamExp:
			if out.unsafe == "" {
				out.unsafe = paramExpUnsafe(n)
			}
		}
		return true
	})
}

func paramExpUnsafe(p *syntax.ParamExp) string {
	switch {
	case p.Param != nil && proc.IsSecretName(p.Param.Value):
		return "it expands $" + p.Param.Value + ", whose name looks like a secret's: its value would reach the output and the model"
	case p.Excl:
		return "indirect expansion ${!name} can run code hidden in a variable's value"
	case p.Index != nil && !arithmIsConstant(p.Index):
		return "an array index is arithmetic that can run code hidden in a variable's value"
	case p.Slice != nil && (!arithmIsConstant(p.Slice.Offset) || !arithmIsConstant(p.Slice.Length)):
		return "a substring offset is arithmetic that can run code hidden in a variable's value"
	case p.Exp != nil && p.Exp.Op == syntax.OtherParamOps:
		if op := p.Exp.Word.Lit(); !strings.Contains("QEAaUuLKk", op) || len(op) != 1 {
			return "the ${name@" + op + "} transformation can run code"
		}
	}
	return ""
}

// arithmIsConstant reports whether an arithmetic expression uses only
// numeric literals, so evaluating it cannot read a variable. A nil
// expression is constant.
func arithmIsConstant(x syntax.ArithmExpr) bool {
	if x == nil {
		return true
	}
	constant := true
	syntax.Walk(x, func(n syntax.Node) bool {
		if !constant {
			return false
		}
		if w, ok := n.(*syntax.Word); ok {
			lit := w.Lit()
			if lit == "" || !isNumericLiteral(lit) {
				constant = false
			}
			return false
		}
		return true
	})
	return constant
}

// isNumericLiteral accepts decimal, octal, hex and base#digits numbers.
func isNumericLiteral(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		isDigit := c >= '0' && c <= '9'
		isLetter := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
		if !isDigit && !isLetter && c != '#' && c != '@' && c != '_' {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}
