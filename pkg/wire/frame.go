package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// Binary terminal frames. Terminal output is most of what a busy runner
// writes, and as base64 inside a JSON line every byte of it costs an encode,
// a decode and a third more bytes through the pipe. A supervisor that says
// so in its hello (Hello.TermFrames) gets term.data from the runner as
// binary frames instead, in the same stream as the JSON lines, so ordering
// with term.opened and term.exit stays exact. docs/wire.md has the layout.
//
//	offset  size  field
//	0       1     0xFF: TermFrameMarker (no JSON message starts with it)
//	1       1     kind: 0x01, term.data
//	2       2     length of termId, big-endian
//	4       2     length of clientId, big-endian (0: every client)
//	6       4     length of data, big-endian
//	10      ...   termId, clientId, data
//	end     1     '\n'
const (
	// TermFrameMarker is the first byte of a frame. A JSON message starts
	// with '{' or whitespace, and 0xFF is not even valid UTF-8.
	TermFrameMarker = 0xFF
	// TermFrameHeaderLen is the fixed part of a frame, before its ids.
	TermFrameHeaderLen = 10

	frameKindTermData = 0x01
	maxFrameID        = 0xFFFF
)

// ErrBadFrame is wrapped by the *LineError of a frame that was read whole
// but does not make a term.data message (an unknown kind, no termId). The
// frame is skipped and the stream goes on.
var ErrBadFrame = errors.New("bad terminal frame")

// ErrFrameSync is wrapped by a *FrameError: a frame ended short, or its
// last byte was not the newline its lengths promised, so where the next
// message starts is unknown.
var ErrFrameSync = errors.New("terminal frame lost sync")

// FrameError reports a stream that cannot be read past a broken frame. It
// is fatal, unlike a *LineError: a frame's payload is arbitrary program
// output, so guessing where the next message starts could read a program's
// output as protocol messages. The reader returns it again on every later
// call.
type FrameError struct {
	Line int64 // 1-based record number (lines and frames) in the stream
	Err  error // wraps ErrFrameSync, and the read error if there was one
}

func (e *FrameError) Error() string {
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}

func (e *FrameError) Unwrap() error { return e.Err }

// TermFrame is a term.data message read from a binary frame.
type TermFrame struct {
	TermID   string
	ClientID string
	// Data is a fresh slice that belongs to the caller.
	Data []byte
}

// Message returns f as the term.data message it stands for.
func (f *TermFrame) Message() *TermData {
	return &TermData{TermID: f.TermID, ClientID: f.ClientID, Data: f.Data}
}

// AppendTermFrame appends the frame of a term.data message to dst. It fails,
// appending nothing, when termID is empty, an id is longer than 65535 bytes,
// or the frame, without its final newline, would pass DefaultMaxLine.
func AppendTermFrame(dst []byte, termID, clientID string, data []byte) ([]byte, error) {
	switch {
	case termID == "":
		return dst, fmt.Errorf("wire: term.data frame: %w: no termId", ErrBadFrame)
	case len(termID) > maxFrameID || len(clientID) > maxFrameID:
		return dst, fmt.Errorf("wire: term.data frame: %w: an id is longer than %d bytes", ErrBadFrame, maxFrameID)
	case TermFrameHeaderLen+len(termID)+len(clientID)+len(data) > DefaultMaxLine:
		return dst, fmt.Errorf("wire: term.data frame: %w: longer than %d bytes", ErrBadFrame, DefaultMaxLine)
	}
	var h [TermFrameHeaderLen]byte
	h[0], h[1] = TermFrameMarker, frameKindTermData
	binary.BigEndian.PutUint16(h[2:], uint16(len(termID)))
	binary.BigEndian.PutUint16(h[4:], uint16(len(clientID)))
	binary.BigEndian.PutUint32(h[6:], uint32(len(data)))
	dst = append(dst, h[:]...)
	dst = append(dst, termID...)
	dst = append(dst, clientID...)
	dst = append(dst, data...)
	return append(dst, '\n'), nil
}

// frameHeader is the fixed part of a frame, decoded.
type frameHeader struct {
	kind             byte
	termLen, cliLen  int
	dataLen          int64
	bodyLen, fullLen int64 // ids and data; the whole frame without its newline
}

func parseFrameHeader(h []byte) frameHeader {
	f := frameHeader{
		kind:    h[1],
		termLen: int(binary.BigEndian.Uint16(h[2:])),
		cliLen:  int(binary.BigEndian.Uint16(h[4:])),
		dataLen: int64(binary.BigEndian.Uint32(h[6:])),
	}
	f.bodyLen = int64(f.termLen+f.cliLen) + f.dataLen
	f.fullLen = TermFrameHeaderLen + f.bodyLen
	return f
}

// AcceptTermFrames makes the reader take binary terminal frames as well as
// lines, through NextRecord. A reader that does not accept them sees a
// frame as a malformed line, which the sender never writes unless asked.
func (lr *LineReader) AcceptTermFrames() { lr.frames = true }

// AllocPayloads makes the reader take each frame's output buffer from
// alloc, which returns a slice of length n, instead of allocating it: a
// consumer that recycles the buffers once done spares the garbage
// collector a large allocation per frame.
func (lr *LineReader) AllocPayloads(alloc func(n int) []byte) { lr.alloc = alloc }

// NextRecord returns the next line, as Next does, or, when the reader
// accepts them, the next terminal frame; exactly one of the two is non-nil
// unless err is. A frame that was read whole but is not a term.data message
// or is longer than the reader's limit is skipped with a *LineError,
// wrapping ErrBadFrame or with TooLong set, and the stream goes on. A frame
// cut short or without its final newline ends the stream with a
// *FrameError.
func (lr *LineReader) NextRecord() ([]byte, *TermFrame, error) {
	if lr.fatal != nil {
		return nil, nil, lr.fatal
	}
	if lr.frames {
		if b, err := lr.r.Peek(1); err == nil && b[0] == TermFrameMarker {
			f, err := lr.readFrame()
			return nil, f, err
		}
	}
	line, err := lr.Next()
	return line, nil, err
}

// readFrame reads the frame starting at the reader's position.
func (lr *LineReader) readFrame() (*TermFrame, error) {
	lr.line++
	lr.terminated = true
	hdr, err := lr.r.Peek(TermFrameHeaderLen)
	if err != nil {
		return nil, lr.broken(fmt.Errorf("frame header cut short: %w", noEOF(err)))
	}
	h := parseFrameHeader(hdr)
	lr.r.Discard(TermFrameHeaderLen)
	var skip *LineError
	switch {
	case h.fullLen > int64(lr.max):
		skip = &LineError{Line: lr.line, Size: int(min(h.fullLen, math.MaxInt)), TooLong: true}
	case h.kind != frameKindTermData:
		skip = &LineError{Line: lr.line, Size: int(h.fullLen), Err: fmt.Errorf("%w: unknown kind 0x%02x", ErrBadFrame, h.kind), Fragment: fmt.Sprintf("% x", hdr[:2])}
	case h.termLen == 0:
		skip = &LineError{Line: lr.line, Size: int(h.fullLen), Err: fmt.Errorf("%w: no termId", ErrBadFrame), Fragment: fmt.Sprintf("% x", hdr[:2])}
	}
	if skip != nil {
		if err := lr.discard(h.bodyLen); err != nil {
			return nil, lr.broken(fmt.Errorf("frame cut short: %w", noEOF(err)))
		}
		if err := lr.frameEnd(); err != nil {
			return nil, err
		}
		return nil, skip
	}

	ids := h.termLen + h.cliLen
	if cap(lr.buf) < ids {
		lr.buf = make([]byte, ids)
	}
	lr.buf = lr.buf[:ids]
	if _, err := io.ReadFull(lr.r, lr.buf); err != nil {
		return nil, lr.broken(fmt.Errorf("frame cut short: %w", noEOF(err)))
	}
	f := &TermFrame{TermID: lr.intern(&lr.lastTerm, lr.buf[:h.termLen]), ClientID: lr.intern(&lr.lastClient, lr.buf[h.termLen:])}
	if lr.alloc != nil {
		f.Data = lr.alloc(int(h.dataLen))
	} else {
		f.Data = make([]byte, h.dataLen)
	}
	if err := lr.readPayload(f.Data); err != nil {
		return nil, lr.broken(fmt.Errorf("frame cut short: %w", noEOF(err)))
	}
	if err := lr.frameEnd(); err != nil {
		return nil, err
	}
	return f, nil
}

// readPayload fills p: what is buffered is copied, and the rest is read
// straight from the source into p, sparing a copy through the buffer. The
// buffer is empty by then, so nothing is read out of order.
func (lr *LineReader) readPayload(p []byte) error {
	n := min(lr.r.Buffered(), len(p))
	if n > 0 {
		b, _ := lr.r.Peek(n)
		copy(p, b)
		lr.r.Discard(n)
	}
	if n == len(p) {
		return nil
	}
	_, err := io.ReadFull(lr.src, p[n:])
	return err
}

// discard skips n bytes of a frame that is not kept.
func (lr *LineReader) discard(n int64) error {
	for n > 0 {
		step := int(min(n, 1<<20))
		if _, err := lr.r.Discard(step); err != nil {
			return err
		}
		n -= int64(step)
	}
	return nil
}

// frameEnd checks the newline that ends every frame.
func (lr *LineReader) frameEnd() error {
	c, err := lr.r.ReadByte()
	if err != nil {
		return lr.broken(fmt.Errorf("frame cut short: %w", noEOF(err)))
	}
	if c != '\n' {
		return lr.broken(fmt.Errorf("frame ends with 0x%02x where its lengths put a newline", c))
	}
	return nil
}

// broken records a fatal framing error, returned from now on.
func (lr *LineReader) broken(err error) error {
	lr.fatal = &FrameError{Line: lr.line, Err: fmt.Errorf("%w: %w", ErrFrameSync, err)}
	return lr.fatal
}

// intern returns b as a string, reusing the last one when it is the same:
// a terminal's frames all name the same ids.
func (lr *LineReader) intern(last *string, b []byte) string {
	if string(b) != *last {
		*last = string(b)
	}
	return *last
}

// noEOF turns the end of the stream inside a frame into
// io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
