package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// DefaultMaxBody bounds one message when the caller sets no limit. The
// agents' largest messages (a session's full event history, a command's
// whole output) stay well below it.
const DefaultMaxBody = 32 << 20

// Framing delimits messages on a byte stream.
type Framing interface {
	// NewReader returns a reader of messages up to maxBody bytes
	// (DefaultMaxBody when maxBody <= 0).
	NewReader(r io.Reader, maxBody int) MessageReader
	// NewWriter returns a writer of messages on w.
	NewWriter(w io.Writer) MessageWriter
	// String names the framing, for messages.
	String() string
}

// MessageReader reads one message body at a time.
type MessageReader interface {
	// Read returns the next body. It returns io.EOF when the stream ends
	// cleanly between messages and a *FrameError when it breaks the
	// framing; after an error the stream must not be read further.
	Read() ([]byte, error)
}

// MessageWriter writes one message body at a time. It is safe for
// concurrent use, and a message goes out in one Write so messages never
// interleave.
type MessageWriter interface {
	Write(body []byte) error
}

// The framings.
var (
	// Lines is newline-delimited JSON: one message per line.
	Lines Framing = lineFraming{}
	// ContentLength is the Language Server Protocol's framing: header
	// lines, an empty line, then a body of Content-Length bytes.
	ContentLength Framing = headerFraming{}
)

type lineFraming struct{}

func (lineFraming) NewReader(r io.Reader, maxBody int) MessageReader {
	return NewLineReader(r, maxBody)
}
func (lineFraming) NewWriter(w io.Writer) MessageWriter { return NewLineWriter(w) }
func (lineFraming) String() string                      { return "newline-delimited" }

type headerFraming struct{}

func (headerFraming) NewReader(r io.Reader, maxBody int) MessageReader {
	return NewHeaderReader(r, maxBody)
}
func (headerFraming) NewWriter(w io.Writer) MessageWriter { return NewHeaderWriter(w) }
func (headerFraming) String() string                      { return "Content-Length" }

// ErrFrame is matched by every framing error: a malformed header block, a
// missing or invalid Content-Length, an oversized message, or a stream that
// ends inside a message. After such an error the stream is out of step and
// must not be read further.
var ErrFrame = errors.New("jsonrpc: bad frame")

// FrameError describes a framing error.
type FrameError struct {
	// Offset is the stream offset at which the bad frame started.
	Offset int64
	// Reason says what was wrong.
	Reason string
	// Err is the underlying read error, if any.
	Err error
}

func (e *FrameError) Error() string {
	msg := fmt.Sprintf("jsonrpc: bad frame at byte %d: %s", e.Offset, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *FrameError) Unwrap() error { return e.Err }

// Is makes every FrameError match ErrFrame.
func (e *FrameError) Is(target error) bool { return target == ErrFrame }

// LineReader reads newline-delimited messages. A line may end in CRLF;
// lines holding only white space are skipped; a last line without its
// newline is still a message.
type LineReader struct {
	r       *bufio.Reader
	maxBody int
	offset  int64
	err     error // sticky, once the stream has ended or broken
}

// NewLineReader returns a LineReader of lines up to maxBody bytes
// (DefaultMaxBody when maxBody <= 0).
func NewLineReader(r io.Reader, maxBody int) *LineReader {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), maxBody: maxBody}
}

// Read returns the next non-blank line without its line ending.
func (r *LineReader) Read() ([]byte, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		start := r.offset
		line, err := r.readLine()
		if err != nil && !errors.Is(err, io.EOF) {
			r.err = &FrameError{Offset: start, Reason: "the stream broke", Err: err}
			if errors.Is(err, errLineTooLong) {
				r.err = &FrameError{Offset: start, Reason: fmt.Sprintf("a line over %d bytes", r.maxBody)}
			}
			return nil, r.err
		}
		if err != nil {
			r.err = io.EOF
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
		if err != nil {
			return nil, io.EOF
		}
	}
}

// readLine reads up to and without the next newline (and a CR before it).
// It returns a copy the caller may keep.
func (r *LineReader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.offset += int64(len(chunk))
		// The line's length so far without its ending: the newline, and
		// a CR before it (or at the end of a chunk, maybe the first half
		// of a CRLF).
		n := len(line) + len(chunk)
		if err == nil {
			n--
		}
		if n > 0 && byteAt(line, chunk, n-1) == '\r' {
			n--
		}
		if n > r.maxBody {
			return nil, errLineTooLong
		}
		if line == nil && err == nil {
			// The common case: the whole line was in the buffer.
			line = append(make([]byte, 0, len(chunk)), chunk...)
		} else {
			line = append(line, chunk...)
		}
		switch {
		case err == nil:
			return bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r")), nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return bytes.TrimSuffix(line, []byte("\r")), err
		}
	}
}

// byteAt is the byte at i of a and b joined.
func byteAt(a, b []byte, i int) byte {
	if i < len(a) {
		return a[i]
	}
	return b[i-len(a)]
}

// LineWriter writes newline-delimited messages.
type LineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

// NewLineWriter returns a LineWriter on w.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: w} }

// Write writes body and a newline. A body holding a newline would break
// the framing and is refused (encoding/json never writes one).
func (w *LineWriter) Write(body []byte) error {
	if bytes.IndexByte(body, '\n') >= 0 {
		return fmt.Errorf("jsonrpc: a newline-delimited message cannot hold a newline")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(append(w.buf[:0], body...), '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		return fmt.Errorf("jsonrpc: write: %w", err)
	}
	if cap(w.buf) > 64<<10 {
		w.buf = nil // keep no large buffer around after a large message
	}
	return nil
}

func truncate(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
