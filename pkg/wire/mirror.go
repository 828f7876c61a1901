package wire

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// The mirror line, {"t":"mirror","seq":N,"event":LINE}, is most of what a
// runner writes on a busy session, so it has an encoder (AppendMirror) that
// wraps the event line as events.jsonl holds it, without re-encoding it, and
// a fast decoder (ParseMirror) that finds the event again without decoding
// it. ScanEvent then reads the event's seq and type, all the supervisor
// needs to forward it. FuzzMirrorRoundTrip holds the two together.

// AppendMirror appends the mirror message for an encoded event line (without
// its newline) to dst, with its newline. It avoids decoding and re-encoding
// the event.
func AppendMirror(dst []byte, seq int64, eventLine []byte) []byte {
	dst = append(dst, `{"t":"mirror","seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"event":`...)
	dst = append(dst, eventLine...)
	dst = append(dst, "}\n"...)
	return dst
}

// errNoSeq is returned for an event line without a numeric top-level seq.
var errNoSeq = errors.New("event line has no seq")

// ScanEvent reads the top-level "seq" and "type" of an event line (an
// events.jsonl line, which a Mirror carries) without decoding the rest, so
// the supervisor's mirror and replay paths never build the event. It stops
// as soon as both are found; the runner's event log writes them first.
func ScanEvent(line []byte) (seq int64, typ []byte, err error) {
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

// mirrorPrefix is how AppendMirror starts every mirror line.
var (
	mirrorPrefix = []byte(`{"t":"mirror","seq":`)
	mirrorEvent  = []byte(`,"event":`)
)

// ParseMirror recognises a mirror line (without its newline) in the exact
// shape AppendMirror writes and returns its seq and event, a sub-slice of
// line, without decoding the event. Any other shape reports false: read it
// with Unmarshal, which takes any field order.
func ParseMirror(line []byte) (seq int64, event []byte, ok bool) {
	if !bytes.HasPrefix(line, mirrorPrefix) {
		return 0, nil, false
	}
	s := scanner{b: line, i: len(mirrorPrefix)}
	seq, ok = s.uint()
	if !ok || !bytes.HasPrefix(line[s.i:], mirrorEvent) {
		return 0, nil, false
	}
	rest := bytes.TrimRight(line[s.i+len(mirrorEvent):], " \t\r")
	// The event must be exactly one object followed by the closing brace;
	// skipping it (no decoding, no allocation) proves nothing else follows.
	ev := scanner{b: rest}
	if len(rest) == 0 || rest[0] != '{' || !ev.skipValue(0) || ev.i != len(rest)-1 || rest[ev.i] != '}' {
		return 0, nil, false
	}
	return seq, rest[:ev.i], true
}
