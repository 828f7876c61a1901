package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"sync"
)

// DefaultMaxLine bounds one protocol line. A longer line is reported and
// skipped; the stream goes on.
const DefaultMaxLine = 8 << 20

// LineError reports a line that could not be taken: too long or not a valid
// message. It is not fatal: the next call reads the next line.
type LineError struct {
	Line     int64 // 1-based line number in the stream
	Size     int   // bytes in the line (as many as were seen for an oversized one)
	TooLong  bool
	Err      error
	Fragment string // the line's start, for logs
}

func (e *LineError) Error() string {
	if e.TooLong {
		return fmt.Sprintf("line %d: longer than the limit (%d+ bytes), skipped", e.Line, e.Size)
	}
	return fmt.Sprintf("line %d: %v: %q", e.Line, e.Err, e.Fragment)
}

func (e *LineError) Unwrap() error { return e.Err }

// LineReader reads newline-terminated lines of at most max bytes. A final
// line without a newline is returned at EOF.
type LineReader struct {
	r          *bufio.Reader
	src        io.Reader // what r reads: frame payloads are read from it directly
	max        int
	line       int64
	buf        []byte
	terminated bool

	// Binary terminal frames (frame.go).
	frames               bool
	alloc                func(n int) []byte // a frame's output buffer; nil: make
	fatal                error              // a *FrameError: nothing more can be read
	lastTerm, lastClient string
}

// NewLineReader returns a reader of lines up to max bytes (DefaultMaxLine
// when max <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), src: r, max: max}
}

// Next returns the next line without its newline (and without a trailing
// \r). The slice is valid until the next call. Oversized lines are skipped
// with a *LineError; io.EOF ends the stream.
func (lr *LineReader) Next() ([]byte, error) {
	if lr.fatal != nil {
		return nil, lr.fatal
	}
	lr.buf = lr.buf[:0]
	tooLong := false
	size := 0
	for {
		chunk, err := lr.r.ReadSlice('\n')
		size += len(chunk)
		if !tooLong {
			if len(lr.buf)+len(chunk) > lr.max+1 { // +1: the newline itself
				tooLong = true
				lr.buf = lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case err == nil:
			lr.terminated = true
			lr.line++
			if tooLong {
				return nil, &LineError{Line: lr.line, Size: size, TooLong: true}
			}
			return trimEOL(lr.buf), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if size == 0 {
				return nil, io.EOF
			}
			lr.terminated = false
			lr.line++
			if tooLong {
				return nil, &LineError{Line: lr.line, Size: size, TooLong: true}
			}
			return trimEOL(lr.buf), nil
		default:
			return nil, err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// Terminated reports whether the line last returned ended with a newline;
// only the final line of a stream can lack one.
func (lr *LineReader) Terminated() bool { return lr.terminated }

// Decoder reads Messages, one per line.
type Decoder struct {
	lines *LineReader
}

// NewDecoder returns a decoder of lines up to maxLine bytes (DefaultMaxLine
// when maxLine <= 0).
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	return &Decoder{lines: NewLineReader(r, maxLine)}
}

// AcceptTermFrames makes the decoder take binary terminal frames too
// (LineReader.AcceptTermFrames), each decoded as its term.data message.
func (d *Decoder) AcceptTermFrames() { d.lines.AcceptTermFrames() }

// Decode reads the next message. A *LineError means that line (or frame)
// was skipped and the caller may go on; blank lines are ignored; any other
// error, a *FrameError among them, ends the stream.
func (d *Decoder) Decode() (*Message, error) {
	for {
		line, frame, err := d.lines.NextRecord()
		if err != nil {
			return nil, err
		}
		if frame != nil {
			return frame.Message(), nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m := new(Message)
		if err := json.Unmarshal(line, m); err != nil {
			return nil, &LineError{Line: d.lines.line, Size: len(line), Err: fmt.Errorf("malformed message: %w", err), Fragment: fragment(line)}
		}
		if m.T == "" {
			return nil, &LineError{Line: d.lines.line, Size: len(line), Err: errors.New("message has no \"t\""), Fragment: fragment(line)}
		}
		return m, nil
	}
}

func fragment(b []byte) string {
	if len(b) > 120 {
		b = b[:120]
	}
	return string(b)
}

// Encoder writes Messages, one per line. It is safe for concurrent use;
// each message is written whole with a single Write.
type Encoder struct {
	mu     sync.Mutex
	w      io.Writer
	buf    bytes.Buffer
	frames bool   // term.data goes as binary frames
	frame  []byte // the frame being written, reused
}

// SetTermFrames says whether term.data messages go as binary terminal
// frames (frame.go) rather than JSON lines: only to a reader that asked for
// them. A term.data message that a frame cannot carry (a reqId, an error or
// terminal fields other than termId, clientId and data; an id longer than
// 65535 bytes; more than DefaultMaxLine bytes) still goes as a JSON line.
func (e *Encoder) SetTermFrames(on bool) {
	e.mu.Lock()
	e.frames = on
	e.mu.Unlock()
}

// frameable reports whether a frame carries all of m: a term.data with no
// field set but termId, clientId and data.
func frameable(m *Message) bool {
	if m.T != TTermData || m.Term == nil {
		return false
	}
	rest, t := *m, *m.Term
	rest.T, rest.Term = "", nil
	t.TermID, t.ClientID, t.Data = "", "", nil
	return reflect.ValueOf(rest).IsZero() && reflect.ValueOf(t).IsZero()
}

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Encode writes m as one line.
func (e *Encoder) Encode(m *Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.frames && frameable(m) {
		if frame, err := AppendTermFrame(e.frame[:0], m.Term.TermID, m.Term.ClientID, m.Term.Data); err == nil {
			e.frame = frame
			_, err = e.w.Write(frame)
			return err
		}
	}
	e.buf.Reset()
	if err := json.NewEncoder(&e.buf).Encode(m); err != nil {
		return fmt.Errorf("encode %s: %w", m.T, err)
	}
	_, err := e.w.Write(e.buf.Bytes())
	return err
}

// WriteRaw writes already-encoded lines (each ending in a newline) in one
// Write, keeping them together with concurrent Encode calls.
func (e *Encoder) WriteRaw(lines []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, err := e.w.Write(lines)
	return err
}

// AppendMirror appends the mirror message for an encoded event line (without
// its newline) to dst. It avoids decoding and re-encoding the event.
func AppendMirror(dst []byte, seq int64, eventLine []byte) []byte {
	dst = append(dst, `{"t":"mirror","seq":`...)
	dst = strconv.AppendInt(dst, seq, 10)
	dst = append(dst, `,"event":`...)
	dst = append(dst, eventLine...)
	dst = append(dst, "}\n"...)
	return dst
}
