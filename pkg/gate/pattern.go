package gate

import (
	"errors"
	"fmt"
	"strings"
)

// Limits on patterns, so a settings file cannot make matching expensive.
const (
	maxPatternBytes = 1024
	maxPatternWords = 64
)

// pattern is a compiled word pattern such as "git status|diff|log *".
//
// A pattern is a list of words separated by blanks. Each word is one or
// more alternatives separated by "|"; an alternative is literal text in
// which "*" matches any run of characters (including none). A lone "*"
// as the last word matches any remaining words, none included. A pattern
// matches a whole simple command, word for word.
type pattern struct {
	text  string
	words [][]string // alternatives per word
	rest  bool       // the last word was a lone "*"
}

func compilePattern(s string) (pattern, error) {
	if len(s) > maxPatternBytes {
		return pattern{}, fmt.Errorf("pattern longer than %d bytes", maxPatternBytes)
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return pattern{}, errors.New("empty pattern")
	}
	if len(fields) > maxPatternWords {
		return pattern{}, fmt.Errorf("pattern %q has more than %d words", s, maxPatternWords)
	}
	p := pattern{text: s}
	if fields[len(fields)-1] == "*" && len(fields) > 1 {
		p.rest = true
		fields = fields[:len(fields)-1]
	}
	for _, f := range fields {
		alts := strings.Split(f, "|")
		for _, a := range alts {
			if a == "" {
				return pattern{}, fmt.Errorf("pattern %q: empty alternative in %q", s, f)
			}
		}
		p.words = append(p.words, alts)
	}
	return p, nil
}

// compileAllowPattern compiles an allowlist pattern, which must start
// with a literal command name, and must not name a command that runs
// other commands: such a pattern could never allow anything, because the
// gate judges what the wrapper runs, and accepting it silently would
// mislead whoever wrote it.
func compileAllowPattern(s string) (pattern, error) {
	p, err := compilePattern(s)
	if err != nil {
		return p, err
	}
	for _, name := range p.words[0] {
		if strings.Contains(name, "*") {
			return pattern{}, fmt.Errorf("pattern %q: the command name must be literal, not %q", s, name)
		}
		if why := wrapperReason(commandKey(name)); why != "" {
			return pattern{}, fmt.Errorf("pattern %q: %s %s, so a pattern on it cannot allow anything; allow the command it runs instead", s, name, why)
		}
	}
	return p, nil
}

// match reports whether the words of a simple command match p. Words
// whose value is not known statically (parameters, globs, brace
// expansions) can only be matched by the trailing "*".
func (p pattern) match(words []word) bool {
	if len(words) < len(p.words) || (!p.rest && len(words) != len(p.words)) {
		return false
	}
	for i, alts := range p.words {
		w := words[i]
		if !w.known() {
			return false
		}
		if !matchAlternatives(alts, w.value) {
			return false
		}
	}
	return true
}

func matchAlternatives(alts []string, s string) bool {
	for _, a := range alts {
		if globMatch(a, s) {
			return true
		}
	}
	return false
}

// globMatch matches s against pat, in which only "*" is special. It runs
// in O(len(pat)*len(s)) at worst, with no recursion.
func globMatch(pat, s string) bool {
	if !strings.Contains(pat, "*") {
		return pat == s
	}
	px, sx := 0, 0
	starPx, starSx := -1, 0
	for sx < len(s) {
		switch {
		case px < len(pat) && pat[px] == '*':
			starPx, starSx = px, sx
			px++
		case px < len(pat) && pat[px] == s[sx]:
			px++
			sx++
		case starPx >= 0:
			starSx++
			px, sx = starPx+1, starSx
		default:
			return false
		}
	}
	for px < len(pat) && pat[px] == '*' {
		px++
	}
	return px == len(pat)
}
