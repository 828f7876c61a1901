// Package scrollback keeps the most recent output of a terminal, to replay
// to a client that attaches after it started: a ring of fixed size, in
// which every byte written is copied once.
package scrollback

import (
	"bytes"
	"unicode/utf8"
)

// Ring keeps the last size bytes written. Its zero value keeps nothing.
// Its memory is taken at the first write, so a terminal that prints
// nothing costs nothing.
type Ring struct {
	size    int
	buf     []byte
	next    int  // index the next byte is written at
	used    int  // bytes held, at most size
	dropped bool // older output has been discarded to make room
}

// New returns a ring that keeps the last size bytes.
func New(size int) *Ring { return &Ring{size: max(size, 0)} }

// Write adds p, discarding the oldest output past the ring's size.
func (r *Ring) Write(p []byte) {
	if r.used+len(p) > r.size {
		r.dropped = true
	}
	if r.size == 0 || len(p) == 0 {
		return
	}
	if r.buf == nil {
		r.buf = make([]byte, r.size)
	}
	if len(p) >= r.size {
		copy(r.buf, p[len(p)-r.size:])
		r.next, r.used = 0, r.size
		return
	}
	n := copy(r.buf[r.next:], p)
	copy(r.buf, p[n:])
	r.next = (r.next + len(p)) % r.size
	r.used = min(r.used+len(p), r.size)
}

// Dropped reports whether older output was discarded.
func (r *Ring) Dropped() bool { return r.dropped }

// Replay returns a copy of the held output, oldest byte first. When older
// output was discarded, it starts at a line start near its front (or else
// at a character start) rather than in the middle of whatever was lost.
func (r *Ring) Replay() []byte {
	out := r.snapshot()
	if r.dropped {
		out = alignReplay(out)
	}
	return out
}

// snapshot is the held output, unaligned.
func (r *Ring) snapshot() []byte {
	out := make([]byte, r.used)
	if r.used < r.size {
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

// alignReplay trims the front of output that lost its start so that it
// begins at a line boundary, or failing that at a character boundary.
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
