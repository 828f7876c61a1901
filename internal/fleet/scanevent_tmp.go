package fleet

// TEMPORARY until the proto branch (wire.ScanEvent) is on main: a copy of
// the supervisor's event line scanner. Removed at the rebase.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// errNoSeq is returned for an event line without a numeric top-level seq.
var errNoSeq = errors.New("event line has no seq")

// scanEvent reads the top-level "seq" and "type" of an event line without
// decoding the rest, so the mirror and replay paths never build the event.
// It stops as soon as both are found; the runner writes them first.
func scanEventLine(line []byte) (seq int64, typ []byte, err error) {
	s := scanner{b: line}
	s.space()
	if !s.consume('{') {
		return 0, nil, fmt.Errorf("event line is not a JSON object")
	}
	haveSeq := false
	for {
		s.space()
		if s.consume('}') {
			break
		}
		key, ok := s.str()
		if !ok {
			return 0, nil, fmt.Errorf("event line: bad key at byte %d", s.i)
		}
		s.space()
		if !s.consume(':') {
			return 0, nil, fmt.Errorf("event line: missing ':' at byte %d", s.i)
		}
		s.space()
		switch {
		case string(key) == "seq":
			n, ok := s.uint()
			if !ok {
				return 0, nil, errNoSeq
			}
			seq, haveSeq = n, true
		case string(key) == "type":
			v, ok := s.str()
			if !ok {
				return 0, nil, fmt.Errorf("event line: type is not a string")
			}
			typ = v
		default:
			if !s.skipValue(0) {
				return 0, nil, fmt.Errorf("event line: bad value at byte %d", s.i)
			}
		}
		if haveSeq && typ != nil {
			return seq, typ, nil
		}
		s.space()
		if s.consume(',') {
			continue
		}
		if s.consume('}') {
			break
		}
		return 0, nil, fmt.Errorf("event line: expected ',' or '}' at byte %d", s.i)
	}
	if !haveSeq {
		return 0, nil, errNoSeq
	}
	return seq, typ, nil
}

// maxDepth bounds nesting while skipping values, so hostile input cannot
// exhaust the stack.
const maxDepth = 512

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(c byte) bool {
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// str reads a string and returns its raw content (escapes left as they
// are); event types and keys never need unescaping.
func (s *scanner) str() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	for {
		j := bytes.IndexByte(s.b[s.i:], '"')
		if j < 0 {
			s.i = len(s.b)
			return nil, false
		}
		s.i += j
		// A quote after an odd number of backslashes is escaped.
		k := s.i
		for k > start && s.b[k-1] == '\\' {
			k--
		}
		s.i++
		if (s.i-1-k)%2 == 0 {
			return s.b[start : s.i-1], true
		}
	}
}

// uint reads a non-negative integer that fits in an int64.
func (s *scanner) uint() (int64, bool) {
	start := s.i
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		d := int64(s.b[s.i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
		s.i++
	}
	return n, s.i > start
}

func (s *scanner) skipValue(depth int) bool {
	if depth > maxDepth || s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, ok := s.str()
		return ok
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		s.i++
		s.space()
		if s.consume(closer) {
			return true
		}
		for {
			s.space()
			if c == '{' {
				if _, ok := s.str(); !ok {
					return false
				}
				s.space()
				if !s.consume(':') {
					return false
				}
				s.space()
			}
			if !s.skipValue(depth + 1) {
				return false
			}
			s.space()
			if s.consume(',') {
				continue
			}
			return s.consume(closer)
		}
	default:
		// number, true, false, null: everything up to a delimiter.
		start := s.i
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return s.i > start
			}
			s.i++
		}
		return s.i > start
	}
}
