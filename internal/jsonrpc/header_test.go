package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestHeaderReaderReadsFrames(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{"one frame", "Content-Length: 2\r\n\r\n{}", []string{"{}"}},
		{"two frames back to back", "Content-Length: 2\r\n\r\n{}Content-Length: 7\r\n\r\n{\"a\":1}", []string{"{}", `{"a":1}`}},
		{"content type is ignored", "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n[]", []string{"[]"}},
		{"header name is case-insensitive", "content-length: 2\r\n\r\n{}", []string{"{}"}},
		{"spaces around the value", "Content-Length:   2  \r\n\r\n{}", []string{"{}"}},
		{"bare LF line ends", "Content-Length: 2\n\n{}", []string{"{}"}},
		{"empty body", "Content-Length: 0\r\n\r\n", []string{""}},
		{"repeated equal lengths", "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}", []string{"{}"}},
		{"body holds CRLF and multibyte text", "Content-Length: 8\r\n\r\n\"é\r\n\"\r\n", []string{"\"é\r\n\"\r\n"}},
		{"empty stream", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkReadsAll(t, NewHeaderReader(strings.NewReader(tt.stream), 0), tt.want)
		})
	}
}

func TestHeaderReaderRejectsBadFrames(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		reason string
	}{
		{"no content length", "Content-Type: x\r\n\r\n{}", "no Content-Length"},
		{"negative length", "Content-Length: -1\r\n\r\n", "not a decimal number"},
		{"signed length", "Content-Length: +2\r\n\r\n{}", "not a decimal number"},
		{"hex length", "Content-Length: 0x2\r\n\r\n{}", "not a decimal number"},
		{"empty length", "Content-Length:\r\n\r\n", "empty"},
		{"huge length", "Content-Length: 99999999999999999999\r\n\r\n", "out of range"},
		{"over the limit", "Content-Length: 65\r\n\r\n", "exceeds the limit"},
		{"conflicting lengths", "Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "two different"},
		{"header without colon", "Content-Length 2\r\n\r\n{}", "no colon"},
		{"header without name", ": 2\r\n\r\n{}", "no name"},
		{"blank line first", "\r\nContent-Length: 2\r\n\r\n{}", "empty line"},
		{"stream ends in headers", "Content-Length: 2\r\n", "inside the header block"},
		{"stream ends mid line", "Content-Len", "inside the header block"},
		{"stream ends in body", "Content-Length: 10\r\n\r\n{}", "after 2 of 10 body bytes"},
		{"header line too long", "X-Pad: " + strings.Repeat("a", 2000) + "\r\nContent-Length: 2\r\n\r\n{}", "longer than"},
		{"too many headers", strings.Repeat("X: y\r\n", 40) + "Content-Length: 2\r\n\r\n{}", "more than"},
		{"text where a header belongs", "Segmentation fault\r\n\r\n", "header line \"Segmentation fault\" has no colon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewHeaderReader(strings.NewReader(tt.stream), 64)
			_, err := r.Read()
			if !errors.Is(err, ErrFrame) {
				t.Fatalf("Read error = %v, want a frame error", err)
			}
			if !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("Read error = %q, want it to mention %q", err, tt.reason)
			}
		})
	}
}

func TestHeaderReaderReportsOffsetOfBadFrame(t *testing.T) {
	r := NewHeaderReader(strings.NewReader("Content-Length: 2\r\n\r\n{}Content-Length: x\r\n\r\n"), 0)
	if _, err := r.Read(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Read()
	var fe *FrameError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v, want *FrameError", err)
	}
	if fe.Offset != 23 {
		t.Fatalf("offset = %d, want 23", fe.Offset)
	}
}

func TestHeaderWriterFramesWhatReaderReads(t *testing.T) {
	var buf bytes.Buffer
	w := NewHeaderWriter(&buf)
	bodies := []string{`{"jsonrpc":"2.0","method":"a"}`, "", "\"\r\n\r\nContent-Length: 3\""}
	for _, b := range bodies {
		if err := w.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(buf.String(), "Content-Length: 30\r\n\r\n{") {
		t.Fatalf("frame = %q, want a Content-Length header and a blank line", buf.String())
	}
	r := NewHeaderReader(&buf, 0)
	for _, want := range bodies {
		got, err := r.Read()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("body = %q, want %q", got, want)
		}
	}
	if _, err := r.Read(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, io.ErrClosedPipe }

func TestHeaderWriterReportsWriteErrors(t *testing.T) {
	err := NewHeaderWriter(failingWriter{}).Write([]byte("{}"))
	if !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("err = %v, want the pipe error", err)
	}
}

// FuzzHeaderReader feeds arbitrary streams to the HeaderReader: it must
// never panic, never return a body over the limit, and after an error must
// not be relied on (so the loop stops).
func FuzzHeaderReader(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 2\r\nContent-Type: x\r\n\r\n{}Content-Length: 0\r\n\r\n"))
	f.Add([]byte("Content-Length: 5\r\n\r\n{}"))
	f.Add([]byte("content-length:3\n\n[1]"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		const limit = 1 << 12
		r := NewHeaderReader(bytes.NewReader(stream), limit)
		total := 0
		for {
			body, err := r.Read()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrFrame) {
					t.Fatalf("error %v is neither EOF nor a frame error", err)
				}
				return
			}
			if len(body) > limit {
				t.Fatalf("body of %d bytes over the %d limit", len(body), limit)
			}
			total += len(body)
			if total > len(stream) {
				t.Fatalf("read %d body bytes from a %d-byte stream", total, len(stream))
			}
		}
	})
}
