package term

import (
	"bytes"
	"unicode/utf8"
)

// ring keeps the most recent output of a terminal, up to a fixed size.
type ring struct {
	buf     []byte
	next    int  // index the next byte is written at
	used    int  // bytes held, at most len(buf)
	dropped bool // older output has been discarded to make room
}

func newRing(size int) *ring {
	return &ring{buf: make([]byte, size)}
}

func (r *ring) write(p []byte) {
	size := len(r.buf)
	if r.used+len(p) > size {
		r.dropped = true
	}
	if size == 0 || len(p) == 0 {
		return
	}
	if len(p) >= size {
		copy(r.buf, p[len(p)-size:])
		r.next, r.used = 0, size
		return
	}
	n := copy(r.buf[r.next:], p)
	copy(r.buf, p[n:])
	r.next = (r.next + len(p)) % size
	r.used = min(r.used+len(p), size)
}

// snapshot returns a copy of the held output, oldest byte first.
func (r *ring) snapshot() []byte {
	out := make([]byte, r.used)
	if r.used < len(r.buf) {
		copy(out, r.buf[:r.used])
		return out
	}
	n := copy(out, r.buf[r.next:])
	copy(out[n:], r.buf[:r.next])
	return out
}

// alignScan bounds how far into a replay alignReplay looks for a line start,
// so a screen drawn without newlines is not thrown away wholesale.
const alignScan = 4 << 10

// alignReplay trims the front of a scrollback that lost older output so the
// replay starts at a line boundary, or failing that at a character boundary,
// rather than in the middle of whatever was overwritten.
func alignReplay(p []byte) []byte {
	if i := bytes.IndexByte(p[:min(len(p), alignScan)], '\n'); i >= 0 {
		return p[i+1:]
	}
	for i := 0; i < len(p) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(p[i]) {
			return p[i:]
		}
	}
	return p
}
