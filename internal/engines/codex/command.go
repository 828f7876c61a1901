package codex

import (
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// shellScript returns the shell command a Codex command execution runs,
// without the "/bin/bash -lc '...'" wrapper Codex puts around every model
// command: the gate judges what runs, not the login shell that runs it.
// Anything that is not exactly such a wrapper is kept as it is. (The
// approval request's proposedExecpolicyAmendment is not the command's
// argv: for "/bin/bash -lc cat" it is ["cat"], a rule prefix.)
func shellScript(command string) string {
	if words, ok := literalWords(command); ok {
		if s, ok := unwrap(words); ok {
			return s
		}
	}
	return command
}

// stdinText returns the input of a write_stdin approval, whose command
// Codex renders as "write_stdin --session-id N '<input>'": the input is
// what reaches the running process, so it is what the gate judges.
func stdinText(command string) string {
	if words, ok := literalWords(command); ok && len(words) >= 2 && words[0] == "write_stdin" {
		return words[len(words)-1]
	}
	return command
}

// unwrap recognises [sh|bash|zsh, -c|-lc, script].
func unwrap(argv []string) (string, bool) {
	if len(argv) != 3 {
		return "", false
	}
	switch filepath.Base(argv[0]) {
	case "bash", "sh", "zsh":
	default:
		return "", false
	}
	if argv[1] != "-c" && argv[1] != "-lc" {
		return "", false
	}
	return argv[2], true
}

// literalWords splits a one-command line into its words when every word is
// literal text (plain, single- or double-quoted without expansions).
func literalWords(line string) ([]string, bool) {
	f, err := syntax.NewParser().Parse(strings.NewReader(line), "")
	if err != nil || len(f.Stmts) != 1 {
		return nil, false
	}
	st := f.Stmts[0]
	call, ok := st.Cmd.(*syntax.CallExpr)
	if !ok || st.Negated || st.Background || len(st.Redirs) > 0 || len(call.Assigns) > 0 {
		return nil, false
	}
	words := make([]string, 0, len(call.Args))
	for _, w := range call.Args {
		s, ok := literalWord(w)
		if !ok {
			return nil, false
		}
		words = append(words, s)
	}
	return words, true
}

func literalWord(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeLit(p.Value))
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescapeDouble(lit.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescapeLit removes the backslashes of an unquoted word.
func unescapeLit(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeDouble removes the backslashes that escape inside double quotes.
func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
