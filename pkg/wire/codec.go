package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	for first := true; ; first = false {
		chunk, err := lr.r.ReadSlice('\n')
		if first && err == nil && len(chunk) <= lr.max+1 {
			// A whole line in the reader's buffer is returned from
			// there: it is valid until the next read, as promised, and
			// a busy runner's lines are not each copied once more. Its
			// capacity ends with it, so an append cannot write over the
			// lines buffered behind it.
			lr.terminated = true
			lr.line++
			line := trimEOL(chunk)
			return line[:len(line):len(line)], nil
		}
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

// LineBuffered reports whether a whole line is already read in, so that
// the next call to Next (or NextRecord) returns without waiting for input.
// A reader batching what it got from one read asks it to know when to
// act on the batch.
func (lr *LineReader) LineBuffered() bool {
	b, _ := lr.r.Peek(lr.r.Buffered())
	if lr.frames && len(b) > 0 && b[0] == TermFrameMarker {
		return false // a frame's payload may still be on its way
	}
	return bytes.IndexByte(b, '\n') >= 0
}

// Terminated reports whether the line last returned ended with a newline;
// only the final line of a stream can lack one.
func (lr *LineReader) Terminated() bool { return lr.terminated }

// Decoder reads Messages, one per line (or binary frame).
type Decoder struct {
	lines *LineReader
}

// NewDecoder returns a decoder of lines up to maxLine bytes (DefaultMaxLine
// when maxLine <= 0).
func NewDecoder(r io.Reader, maxLine int) *Decoder {
	return &Decoder{lines: NewLineReader(r, maxLine)}
}

// AcceptTermFrames makes the decoder take binary terminal frames too
// (LineReader.AcceptTermFrames), each decoded as its *TermData.
func (d *Decoder) AcceptTermFrames() { d.lines.AcceptTermFrames() }

// Decode reads the next message and the request id it carries: a
// request's own, a reply's echo, "" for a message that is neither. The
// message is a pointer to one of this package's message types. A
// *LineError means that line (or frame) was skipped and the caller may go
// on; blank lines are ignored; any other error, a *FrameError among them,
// ends the stream.
func (d *Decoder) Decode() (Message, string, error) {
	for {
		line, frame, err := d.lines.NextRecord()
		if err != nil {
			return nil, "", err
		}
		if frame != nil {
			return frame.Message(), "", nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		m, reqID, err := Unmarshal(line)
		if err != nil {
			return nil, "", &LineError{Line: d.lines.line, Size: len(line), Err: err, Fragment: fragment(line)}
		}
		return m, reqID, nil
	}
}

// head is what every message line has besides its type's own fields.
type head struct {
	T     Type   `json:"t"`
	ReqID string `json:"reqId"`
}

// Unmarshal decodes one message line: the message, a pointer to one of
// this package's message types, and its request id. Fields a message type
// does not know are ignored.
func Unmarshal(line []byte) (Message, string, error) {
	var h head
	if err := json.Unmarshal(line, &h); err != nil {
		return nil, "", fmt.Errorf("malformed message: %w", err)
	}
	if h.T == "" {
		return nil, "", errors.New(`message has no "t"`)
	}
	mk := messages[h.T]
	if mk == nil {
		return nil, "", fmt.Errorf("unknown message type %q", h.T)
	}
	m := mk()
	if err := json.Unmarshal(line, m); err != nil {
		return nil, "", fmt.Errorf("malformed %s message: %w", h.T, err)
	}
	return m, h.ReqID, nil
}

func fragment(b []byte) string {
	if len(b) > 120 {
		b = b[:120]
	}
	return string(b)
}

// AppendMessage appends the line of m (with its newline) to dst: a JSON
// object whose "t" comes first, then "reqId" when reqID is set, then the
// message type's fields.
func AppendMessage(dst []byte, reqID string, m Message) ([]byte, error) {
	if reqID == "" {
		if st, ok := asState(m); ok {
			return AppendState(dst, st), nil
		}
	}
	return appendJSON(dst, reqID, m)
}

// appendJSON is AppendMessage through encoding/json, for every message
// without an encoder of its own.
func appendJSON(dst []byte, reqID string, m Message) ([]byte, error) {
	body, err := json.Marshal(m)
	if err != nil {
		return dst, fmt.Errorf("encode %s: %w", m.Type(), err)
	}
	if len(body) < 2 || body[0] != '{' {
		return dst, fmt.Errorf("encode %s: not a JSON object", m.Type())
	}
	dst = append(dst, `{"t":`...)
	dst = appendJSONString(dst, string(m.Type()))
	if reqID != "" {
		dst = append(dst, `,"reqId":`...)
		dst = appendJSONString(dst, reqID)
	}
	if len(body) > 2 {
		dst = append(dst, ',')
		dst = append(dst, body[1:]...)
	} else {
		dst = append(dst, '}')
	}
	return append(dst, '\n'), nil
}

// asState returns m when it is a state report.
func asState(m Message) (StateReport, bool) {
	switch st := m.(type) {
	case *StateReport:
		if st != nil {
			return *st, true
		}
	case StateReport:
		return st, true
	}
	return StateReport{}, false
}

// asTermData returns m when it is a term.data message.
func asTermData(m Message) (*TermData, bool) {
	switch d := m.(type) {
	case *TermData:
		return d, d != nil
	case TermData:
		return &d, true
	}
	return nil, false
}

// Encoder writes Messages, one per line. It is safe for concurrent use;
// each message is written whole with a single Write.
type Encoder struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	frames bool // term.data goes as binary frames

	holds int    // Hold calls not yet released
	held  []byte // lines EncodeOrHold kept back, written ahead of the next write
}

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// SetTermFrames says whether term.data messages go as binary terminal
// frames (frame.go) rather than JSON lines: only to a reader that asked for
// them. A term.data a frame cannot carry (an id longer than 65535 bytes,
// more than DefaultMaxLine bytes) still goes as a JSON line.
func (e *Encoder) SetTermFrames(on bool) {
	e.mu.Lock()
	e.frames = on
	e.mu.Unlock()
}

// Encode writes m, a message that is neither a request nor a reply.
func (e *Encoder) Encode(m Message) error { return e.EncodeID("", m) }

// EncodeID writes m with a request id: a request's own, or, for a reply,
// the id of the request it answers.
func (e *Encoder) EncodeID(reqID string, m Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.encodeLocked(reqID, m)
}

func (e *Encoder) encodeLocked(reqID string, m Message) error {
	// Lines held back go first, in the same write.
	start := len(e.held)
	e.buf = append(e.buf[:0], e.held...)
	e.held = e.held[:0]
	if d, ok := asTermData(m); ok && e.frames && reqID == "" {
		if frame, err := AppendTermFrame(e.buf, d.TermID, d.ClientID, d.Data); err == nil {
			e.buf = frame
			_, err = e.w.Write(frame)
			return err
		}
	}
	line, err := AppendMessage(e.buf, reqID, m)
	if err != nil {
		if start > 0 {
			_, werr := e.w.Write(e.buf[:start])
			err = errors.Join(err, werr)
		}
		return err
	}
	e.buf = line
	_, err = e.w.Write(line)
	return err
}

// WriteRaw writes already-encoded lines (each ending in a newline) in one
// Write, keeping them together with concurrent Encode calls.
func (e *Encoder) WriteRaw(lines []byte) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.held) > 0 {
		e.held = append(e.held, lines...)
		lines = e.held
		e.held = e.held[:0]
	}
	_, err := e.w.Write(lines)
	return err
}

// Hold makes EncodeOrHold keep its messages back until the next write, at
// the latest the ReleaseID that ends this Hold: a command whose reply
// follows at once sends the reports it causes in the same write as the
// reply, and the reader acts on them in order, reports first, from one
// read. Every Hold must be ended by one ReleaseID.
func (e *Encoder) Hold() {
	e.mu.Lock()
	e.holds++
	e.mu.Unlock()
}

// ReleaseID ends a Hold by writing m (the reply it waited for) with reqID,
// after every line held back, in one write.
func (e *Encoder) ReleaseID(reqID string, m Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.holds--
	return e.encodeLocked(reqID, m)
}

// EncodeOrHold writes m, a message that is neither a request nor a reply,
// or, while a Hold is under way, keeps it back for the next write. The
// order of messages on the stream is the order of the calls either way.
func (e *Encoder) EncodeOrHold(m Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.holds == 0 {
		return e.encodeLocked("", m)
	}
	held, err := AppendMessage(e.held, "", m)
	if err != nil {
		return err
	}
	e.held = held
	return nil
}

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) && s[i] != ' ' {
			raw, _ := json.Marshal(s) // a string always encodes
			return append(dst, raw...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// plainByte reports whether c needs no escaping in a JSON string.
func plainByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == ':', c == '@':
		return true
	}
	return false
}
