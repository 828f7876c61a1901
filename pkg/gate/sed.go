package gate

import (
	"fmt"
	"strings"
)

// sed judges sed: -i makes its files edits, and its script must stay
// within a subset that cannot run commands (GNU sed's e command and s///e
// flag) or touch other files (r, R, w, W and s///w). A script outside
// the subset is asked rather than guessed at.
func (j *judge) sed(c cmdLine, f *facts, t *tally) {
	f.readOnly = true
	opts, operands, ok := scanOpts(c.words, 1, optSpec{short: "efl", long: []string{"expression", "file", "line-length"}})
	if !ok {
		t.add(askV(CategoryShell, "sed is missing an option's value"))
		return
	}
	inPlace := false
	var scripts []option
	for _, o := range opts {
		f.claim(o.valueIdx)
		switch {
		case o.name == "-i" || o.name == "--in-place":
			// -i.bak reads as more flags after -i; only the -i matters.
			inPlace = true
		case o.name == "-f" || o.name == "--file":
			t.add(askV(CategoryShell, "sed -f runs a script file the gate cannot see"))
			return
		case o.name == "-e" || o.name == "--expression":
			scripts = append(scripts, o)
		}
	}
	files := operands
	if len(scripts) == 0 {
		if len(operands) == 0 {
			t.add(askV(CategoryShell, "sed without a script"))
			return
		}
		w := c.words[operands[0]]
		f.claim(operands[0])
		files = operands[1:]
		if !w.known() {
			t.add(askV(CategoryShell, fmt.Sprintf("the sed script %s is only known when it runs", shown(c.nodes[operands[0]], j))))
			return
		}
		if why := unsafeSedScript(w.value); why != "" {
			t.add(askV(CategoryShell, "the sed script "+why))
		}
	}
	for _, o := range scripts {
		w, node := c.valueWord(o)
		if !w.known() {
			t.add(askV(CategoryShell, fmt.Sprintf("the sed script %s is only known when it runs", shown(node, j))))
			continue
		}
		if why := unsafeSedScript(w.value); why != "" {
			t.add(askV(CategoryShell, "the sed script "+why))
		}
	}
	if inPlace {
		f.writes = "sed -i edits files"
		if len(files) == 0 {
			t.add(askV(CategoryEdit, "sed -i without files"))
		}
		for _, i := range files {
			f.claim(i)
			j.editArg(c.words[i], c.nodes[i], c.cwds, t)
		}
	}
}

// unsafeSedScript checks a sed script against a subset of commands that
// only print, delete, substitute and move between lines. It returns why
// the script falls outside, or "".
func unsafeSedScript(script string) string {
	s := sedScanner{src: script}
	for {
		s.skipSpaceAndSeparators()
		if s.done() {
			return ""
		}
		if why := s.address(); why != "" {
			return why
		}
		s.skipSpace()
		if s.peek() == '!' {
			s.pos++
			s.skipSpace()
		}
		if s.done() {
			return "ends after an address"
		}
		cmd := s.next()
		switch cmd {
		case 'p', 'P', 'd', 'D', 'n', 'N', 'g', 'G', 'h', 'H', 'x', 'z', '=', 'l', '{', '}':
		case 'q', 'Q':
			s.digits()
		case 'a', 'i', 'c':
			s.restOfLine() // text to add, never run
		case 's':
			if why := s.substitution(); why != "" {
				return why
			}
		case 'y':
			if why := s.delimited(2); why != "" {
				return why
			}
		case 'e':
			return "uses e, which runs a command"
		case 'r', 'R', 'w', 'W':
			return fmt.Sprintf("uses %c, which reads or writes another file", cmd)
		default:
			return fmt.Sprintf("uses %q, which is beyond the subset of sed the gate understands", cmd)
		}
	}
}

type sedScanner struct {
	src string
	pos int
}

func (s *sedScanner) done() bool { return s.pos >= len(s.src) }

func (s *sedScanner) peek() byte {
	if s.done() {
		return 0
	}
	return s.src[s.pos]
}

func (s *sedScanner) next() byte {
	c := s.peek()
	s.pos++
	return c
}

func (s *sedScanner) skipSpace() {
	for !s.done() && (s.peek() == ' ' || s.peek() == '\t') {
		s.pos++
	}
}

func (s *sedScanner) skipSpaceAndSeparators() {
	for !s.done() && strings.IndexByte(" \t\n;", s.peek()) >= 0 {
		s.pos++
	}
}

func (s *sedScanner) digits() {
	for !s.done() && s.peek() >= '0' && s.peek() <= '9' {
		s.pos++
	}
}

func (s *sedScanner) restOfLine() {
	for !s.done() && s.peek() != '\n' {
		s.pos++
	}
}

// address reads up to two addresses: numbers, $, first~step, /regex/ or
// \cregexc.
func (s *sedScanner) address() string {
	for n := 0; n < 2; n++ {
		switch c := s.peek(); {
		case c >= '0' && c <= '9':
			s.digits()
			if s.peek() == '~' {
				s.pos++
				s.digits()
			}
		case c == '$':
			s.pos++
		case c == '/':
			s.pos++
			if !s.until('/') {
				return "has an unterminated address"
			}
			s.regexFlags()
		case c == '\\':
			s.pos++
			if s.done() {
				return "has an unterminated address"
			}
			if !s.until(s.next()) {
				return "has an unterminated address"
			}
			s.regexFlags()
		default:
			if n == 1 {
				return "has an address the gate does not understand"
			}
			return ""
		}
		if s.peek() != ',' {
			return ""
		}
		s.pos++
		if c := s.peek(); c == '+' || c == '~' {
			s.pos++
			s.digits()
			return ""
		}
	}
	return ""
}

func (s *sedScanner) regexFlags() {
	for !s.done() && (s.peek() == 'I' || s.peek() == 'M') {
		s.pos++
	}
}

// until consumes up to and including the next unescaped delim.
func (s *sedScanner) until(delim byte) bool {
	for !s.done() {
		c := s.next()
		switch {
		case c == '\\':
			s.pos++
		case c == delim:
			return true
		case c == '\n':
			return false
		}
	}
	return false
}

// delimited reads a delimiter and n delimited fields.
func (s *sedScanner) delimited(n int) string {
	if s.done() {
		return "has an unterminated command"
	}
	delim := s.next()
	if delim == '\\' || delim == '\n' {
		return "uses a delimiter the gate does not understand"
	}
	for i := 0; i < n; i++ {
		if !s.until(delim) {
			return "has an unterminated command"
		}
	}
	return ""
}

// substitution reads s/regex/replacement/flags and refuses the e and w
// flags.
func (s *sedScanner) substitution() string {
	if why := s.delimited(2); why != "" {
		return why
	}
	for !s.done() {
		c := s.peek()
		switch {
		case c == 'g' || c == 'p' || c == 'i' || c == 'I' || c == 'm' || c == 'M' || (c >= '0' && c <= '9'):
			s.pos++
		case c == 'e':
			return "uses s///e, which runs the pattern space as a command"
		case c == 'w':
			return "uses s///w, which writes another file"
		default:
			return ""
		}
	}
	return ""
}
