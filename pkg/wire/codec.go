package wire

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	max        int
	line       int64
	buf        []byte
	terminated bool
}

// NewLineReader returns a reader of lines up to max bytes (DefaultMaxLine
// when max <= 0).
func NewLineReader(r io.Reader, max int) *LineReader {
	if max <= 0 {
		max = DefaultMaxLine
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// Next returns the next line without its newline (and without a trailing
// \r). The slice is valid until the next call. Oversized lines are skipped
// with a *LineError; io.EOF ends the stream.
func (lr *LineReader) Next() ([]byte, error) {
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

// Decode reads the next message. A *LineError means that line was skipped
// and the caller may go on; blank lines are ignored; any other error ends
// the stream.
func (d *Decoder) Decode() (*Message, error) {
	for {
		line, err := d.lines.Next()
		if err != nil {
			return nil, err
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
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

// NewEncoder returns an encoder writing to w.
func NewEncoder(w io.Writer) *Encoder { return &Encoder{w: w} }

// Encode writes m as one line.
func (e *Encoder) Encode(m *Message) error {
	e.mu.Lock()
	defer e.mu.Unlock()
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
