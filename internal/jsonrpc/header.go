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

// Limits on the header block. Real peers send one or two short lines; the
// bounds keep a corrupt stream from growing memory without limit.
const (
	maxHeaderLine  = 1024
	maxHeaderLines = 32
)

// HeaderReader reads bodies framed the way the Language Server Protocol
// frames them: a block of "Name: value" header lines, an empty line, and a
// body of exactly Content-Length bytes.
type HeaderReader struct {
	r       *bufio.Reader
	maxBody int
	offset  int64
}

// NewHeaderReader returns a HeaderReader of bodies up to maxBody bytes
// (DefaultMaxBody when maxBody <= 0).
func NewHeaderReader(r io.Reader, maxBody int) *HeaderReader {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return &HeaderReader{r: bufio.NewReaderSize(r, 64<<10), maxBody: maxBody}
}

// Read returns the next message body. It returns io.EOF when the stream
// ends cleanly between messages, and a *FrameError for anything else that
// is not a well-formed frame.
func (r *HeaderReader) Read() ([]byte, error) {
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
func (r *HeaderReader) readLine() ([]byte, error) {
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

// HeaderWriter writes Content-Length framed messages. It is safe for
// concurrent use; each message goes out in a single Write so frames never
// interleave.
type HeaderWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf bytes.Buffer
}

// NewHeaderWriter returns a HeaderWriter on w.
func NewHeaderWriter(w io.Writer) *HeaderWriter { return &HeaderWriter{w: w} }

// Write frames body and writes it.
func (w *HeaderWriter) Write(body []byte) error {
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
