package httpapi

import (
	"bytes"
	"unicode/utf8"
)

// alignWindow bounds how far into a replay that lost its start the first
// line start is looked for.
const alignWindow = 4 << 10

// scrollback keeps the most recent output, up to limit bytes.
type scrollback struct {
	limit   int
	buf     []byte
	dropped bool // older output was discarded
}

func (s *scrollback) write(p []byte) {
	s.buf = append(s.buf, p...)
	// Trimmed only past twice the limit, so the copy costs little per
	// byte written.
	if len(s.buf) > 2*s.limit {
		s.buf = append(s.buf[:0], s.buf[len(s.buf)-s.limit:]...)
		s.dropped = true
	}
}

// snapshot copies the held output. When older output was lost it starts
// at a line start near its front, or else at a character start, not in
// the middle of whatever was discarded.
func (s *scrollback) snapshot() []byte {
	p := s.buf
	dropped := s.dropped
	if len(p) > s.limit {
		p, dropped = p[len(p)-s.limit:], true
	}
	if dropped {
		if i := bytes.IndexByte(p[:min(len(p), alignWindow)], '\n'); i >= 0 {
			p = p[i+1:]
		} else {
			for i := 0; i < len(p) && i < utf8.UTFMax; i++ {
				if utf8.RuneStart(p[i]) {
					p = p[i:]
					break
				}
			}
		}
	}
	return bytes.Clone(p)
}
