// Package jsonrpc speaks JSON-RPC 2.0 over a byte stream framed the way the
// Language Server Protocol frames it: each message is a block of
// "Name: value" header lines, an empty line, and a body of exactly
// Content-Length bytes. The Copilot CLI's server mode uses this framing on
// its stdin and stdout.
//
// [Reader] and [Writer] handle the framing alone; [Conn] adds request and
// response correlation, notifications and answers to the peer's requests.
package jsonrpc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// DefaultMaxBody bounds one message body when the caller sets no limit.
// The CLI's largest messages (a session's full event history) stay well
// below it.
const DefaultMaxBody = 32 << 20

// Limits on the header block. Real peers send one or two short lines; the
// bounds keep a corrupt stream from growing memory without limit.
const (
	maxHeaderLine  = 1024
	maxHeaderLines = 32
)

// ErrFrame is matched by every framing error: a malformed header block, a
// missing or invalid Content-Length, an oversized body, or a stream that
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

// Reader reads framed message bodies.
type Reader struct {
	r       *bufio.Reader
	maxBody int
	offset  int64
}

// NewReader returns a Reader of bodies up to maxBody bytes (DefaultMaxBody
// when maxBody <= 0).
func NewReader(r io.Reader, maxBody int) *Reader {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &Reader{r: bufio.NewReaderSize(r, 64<<10), maxBody: maxBody}
}

// Read returns the next message body. It returns io.EOF when the stream
// ends cleanly between messages, and a *FrameError for anything else that
// is not a well-formed frame.
func (r *Reader) Read() ([]byte, error) {
	start := r.offset
	bad := func(err error, format string, args ...any) error {
		return &FrameError{Offset: start, Reason: fmt.Sprintf(format, args...), Err: err}
	}
	length := -1
	for n := 0; ; n++ {
		line, err := r.readLine()
		if err != nil {
			if errors.Is(err, io.EOF) && n == 0 && len(line) == 0 {
				return nil, io.EOF
			}
			if errors.Is(err, errLineTooLong) {
				return nil, bad(nil, "header line longer than %d bytes", maxHeaderLine)
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, bad(err, "stream ended inside the header block")
		}
		if len(line) == 0 {
			if n == 0 {
				return nil, bad(nil, "empty line where a header was expected")
			}
			break
		}
		if n >= maxHeaderLines {
			return nil, bad(nil, "more than %d header lines", maxHeaderLines)
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return nil, bad(nil, "header line %q has no colon", truncate(line))
		}
		name = bytes.TrimSpace(name)
		value = bytes.TrimSpace(value)
		if len(name) == 0 {
			return nil, bad(nil, "header line %q has no name", truncate(line))
		}
		if !bytes.EqualFold(name, []byte("Content-Length")) {
			// Content-Type and any other header carry nothing we need.
			continue
		}
		v, err := parseLength(value)
		if err != nil {
			return nil, bad(nil, "Content-Length %q: %v", truncate(value), err)
		}
		if length >= 0 && v != length {
			return nil, bad(nil, "two different Content-Length headers (%d and %d)", length, v)
		}
		length = v
	}
	if length < 0 {
		return nil, bad(nil, "no Content-Length header")
	}
	if length > r.maxBody {
		return nil, bad(nil, "body of %d bytes exceeds the limit of %d", length, r.maxBody)
	}
	body := make([]byte, length)
	n, err := io.ReadFull(r.r, body)
	r.offset += int64(n)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, bad(err, "stream ended after %d of %d body bytes", n, length)
	}
	return body, nil
}

var errLineTooLong = errors.New("line too long")

// readLine reads one header line without its terminator. Lines end in
// CRLF as the framing requires; a bare LF is accepted too, since nothing is
// gained by refusing it.
func (r *Reader) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.offset += int64(len(chunk))
		if len(line)+len(chunk) > maxHeaderLine+2 {
			return nil, errLineTooLong
		}
		line = append(line, chunk...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
	line = line[:len(line)-1]
	if n := len(line); n > 0 && line[n-1] == '\r' {
		line = line[:n-1]
	}
	return line, nil
}

// parseLength parses a Content-Length value: plain decimal digits only.
func parseLength(v []byte) (int, error) {
	if len(v) == 0 {
		return 0, errors.New("empty")
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, errors.New("not a decimal number")
		}
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n > int64(^uint32(0)>>1) {
		return 0, errors.New("out of range")
	}
	return int(n), nil
}

func truncate(b []byte) string {
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// Writer writes framed messages. It is safe for concurrent use; each
// message goes out in a single Write so frames never interleave.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write frames body and writes it.
func (w *Writer) Write(body []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Reset()
	w.buf.WriteString("Content-Length: ")
	w.buf.WriteString(strconv.Itoa(len(body)))
	w.buf.WriteString("\r\n\r\n")
	w.buf.Write(body)
	if _, err := w.w.Write(w.buf.Bytes()); err != nil {
		return fmt.Errorf("jsonrpc: write: %w", err)
	}
	return nil
}
