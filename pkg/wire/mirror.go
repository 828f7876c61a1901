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

// errTypeNotString is returned for an event line whose top-level type is
// not a string.
var errTypeNotString = errors.New("event line: type is not a string")

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
				return 0, nil, errTypeNotString
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
// are); event types and keys never need unescaping. Most strings of an
// event are short (keys, a type, a time), where a byte loop beats the call
// into bytes.IndexByte; a long one is searched with it past its start.
func (s *scanner) str() ([]byte, bool) {
	if !s.consume('"') {
		return nil, false
	}
	start := s.i
	b := s.b
	i := s.i
	for n := min(len(b), i+shortString); i < n; i++ {
		switch b[i] {
		case '"':
			s.i = i + 1
			return b[start:i], true
		case '\\':
			i++ // the escaped byte, whatever it is
		}
	}
	for i < len(b) {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			break
		}
		// A quote after an odd number of backslashes is escaped.
		q := i + j
		k := q
		for k > start && b[k-1] == '\\' {
			k--
		}
		if (q-k)%2 == 0 {
			s.i = q + 1
			return b[start:q], true
		}
		i = q + 1
	}
	s.i = len(b)
	return nil, false
}

// shortString is how far str reads a string byte by byte.
const shortString = 32

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
	m, ok := ParseMirrorEvent(line)
	return m.Seq, m.Event, ok
}

// MirrorEvent is a mirror line read by ParseMirrorEvent: the line's own seq
// and its event, with what ScanEvent would make of the event.
type MirrorEvent struct {
	Seq   int64  // the mirror line's seq
	Event []byte // the event line, a sub-slice of the mirror line
	// EventSeq and Type are the event's top-level seq and type (Type a
	// sub-slice of Event, nil when it has none), as ScanEvent reads them.
	EventSeq int64
	Type     []byte
	// Err is what ScanEvent would report of Event; EventSeq and Type are
	// then zero.
	Err error
}

// ParseMirrorEvent is ParseMirror and ScanEvent of the event in one pass: a
// runner's output is most of what the supervisor reads, and it reads each
// byte of a mirror line once. Skipping the event (no decoding, no
// allocation) proves it is one object and that nothing else follows; the
// same pass picks up its top-level seq and type as ScanEvent does (the
// first members up to the one by which both are known count). ok is false
// exactly when ParseMirror's would be.
func ParseMirrorEvent(line []byte) (m MirrorEvent, ok bool) {
	if !bytes.HasPrefix(line, mirrorPrefix) {
		return MirrorEvent{}, false
	}
	s := scanner{b: line, i: len(mirrorPrefix)}
	seq, ok := s.uint()
	if !ok || !bytes.HasPrefix(line[s.i:], mirrorEvent) {
		return MirrorEvent{}, false
	}
	rest := trimTrailingSpace(line[s.i+len(mirrorEvent):])
	es := scanner{b: rest}
	evSeq, typ, evErr, ok := es.eventObject()
	if !ok || es.i != len(rest)-1 || rest[es.i] != '}' {
		return MirrorEvent{}, false
	}
	return MirrorEvent{Seq: seq, Event: rest[:es.i], EventSeq: evSeq, Type: typ, Err: evErr}, true
}

// trimTrailingSpace is bytes.TrimRight(b, " \t\r") without building the
// cut set on every call.
func trimTrailingSpace(b []byte) []byte {
	for len(b) > 0 {
		switch b[len(b)-1] {
		case ' ', '\t', '\r':
			b = b[:len(b)-1]
		default:
			return b
		}
	}
	return b
}

// eventObject skips one JSON object at s.i, the whole of it, and reports
// false when it is not one. On the way it reads the object's top-level seq
// and type as ScanEvent does, and err is what ScanEvent would return (seq
// and typ are then zero).
func (s *scanner) eventObject() (seq int64, typ []byte, err error, ok bool) {
	if !s.consume('{') {
		return 0, nil, nil, false
	}
	haveSeq, decided := false, false
	fail := func(e error) {
		if !decided {
			err, decided = e, true
		}
	}
	s.space()
	if s.consume('}') {
		return 0, nil, errNoSeq, true
	}
	for {
		s.space()
		key, ok := s.str()
		if !ok {
			return 0, nil, nil, false
		}
		s.space()
		if !s.consume(':') {
			return 0, nil, nil, false
		}
		s.space()
		switch {
		case !decided && string(key) == "seq":
			start := s.i
			n, ok := s.uint()
			ended := s.i > start && s.i < len(s.b) && s.delimiter()
			// ScanEvent takes digits followed by anything once the
			// type is known, as it stops there; before, what follows
			// the digits fails it.
			if ok && (ended || typ != nil) {
				seq, haveSeq = n, true
			} else {
				fail(errNoSeq)
			}
			if !ended {
				// Skipped whole, from its start, as any other value.
				s.i = start
				if !s.skipValue(1) {
					return 0, nil, nil, false
				}
			}
		case !decided && string(key) == "type":
			if v, ok := s.str(); ok {
				typ = v
			} else {
				fail(errTypeNotString)
				if !s.skipValue(1) {
					return 0, nil, nil, false
				}
			}
		default:
			if !s.skipValue(1) {
				return 0, nil, nil, false
			}
		}
		if haveSeq && typ != nil {
			decided = true
		}
		s.space()
		if s.consume(',') {
			continue
		}
		if !s.consume('}') {
			return 0, nil, nil, false
		}
		if !haveSeq {
			fail(errNoSeq)
		}
		if err != nil {
			return 0, nil, err, true
		}
		return seq, typ, nil, true
	}
}

// delimiter reports whether the byte at s.i may follow a value.
func (s *scanner) delimiter() bool {
	switch s.b[s.i] {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
