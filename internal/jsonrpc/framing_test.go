package jsonrpc

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReaderReadsLines(t *testing.T) {
	tests := []struct {
		name   string
		stream string
		want   []string
	}{
		{"one line", "{}\n", []string{"{}"}},
		{"two lines", "{\"a\":1}\n[2]\n", []string{`{"a":1}`, "[2]"}},
		{"CRLF endings", "{}\r\n{}\r\n", []string{"{}", "{}"}},
		{"blank lines are skipped", "\n  \n{}\n\r\n\t\n{}\n", []string{"{}", "{}"}},
		{"a last line without newline", "{}\n{\"x\":", []string{"{}", `{"x":`}},
		{"a body holding escaped newlines", "\"a\\nb\"\n", []string{`"a\nb"`}},
		{"exactly at the limit", strings.Repeat("x", 64) + "\n", []string{strings.Repeat("x", 64)}},
		{"empty stream", "", nil},
		{"only blank lines", "\n\n \n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkReadsAll(t, NewLineReader(strings.NewReader(tt.stream), 64), tt.want)
		})
	}
}

// checkReadsAll reads r to its end and checks that it gave want.
func checkReadsAll(t *testing.T, r MessageReader, want []string) {
	t.Helper()
	var got []string
	for {
		body, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Read: %v", err)
		}
		got = append(got, string(body))
	}
	if strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
		t.Fatalf("messages = %q, want %q", got, want)
	}
}

func TestLineReaderRefusesLinesOverTheLimit(t *testing.T) {
	for _, stream := range []string{
		strings.Repeat("x", 65) + "\n{}\n",
		"{}\n" + strings.Repeat("x", 200),
		strings.Repeat("y", 70<<10) + "\n", // longer than the read buffer too
	} {
		r := NewLineReader(strings.NewReader(stream), 64)
		var err error
		for err == nil {
			_, err = r.Read()
		}
		var fe *FrameError
		if !errors.As(err, &fe) || !strings.Contains(err.Error(), "over 64 bytes") {
			t.Fatalf("Read = %v, want a frame error naming the limit", err)
		}
		if _, again := r.Read(); !errors.Is(again, ErrFrame) {
			t.Fatalf("after a frame error Read = %v, want the same error", again)
		}
	}
}

func TestLineReaderHandsOutCopies(t *testing.T) {
	r := NewLineReader(strings.NewReader("{\"a\":1}\n{\"b\":2}\n"), 0)
	first, _ := r.Read()
	if _, err := r.Read(); err != nil {
		t.Fatal(err)
	}
	if string(first) != `{"a":1}` {
		t.Fatalf("the first line changed to %q after the next Read", first)
	}
}

func TestLineWriterWritesOneLinePerMessage(t *testing.T) {
	var buf bytes.Buffer
	w := NewLineWriter(&buf)
	for _, b := range []string{`{"a":1}`, `"é\r"`} {
		if err := w.Write([]byte(b)); err != nil {
			t.Fatal(err)
		}
	}
	if buf.String() != "{\"a\":1}\n\"é\\r\"\n" {
		t.Fatalf("stream = %q", buf.String())
	}
	if err := w.Write([]byte("{}\n{}")); err == nil {
		t.Fatal("a body holding a newline was written")
	}
	if err := NewLineWriter(failingWriter{}).Write([]byte("{}")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("err = %v, want the pipe error", err)
	}
}

// FuzzLineReader feeds arbitrary streams to the LineReader: it must never
// panic, never return a line over the limit or holding a newline, never
// return more than the stream held, and stop after an error.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("{}\n"))
	f.Add([]byte("{\"jsonrpc\":\"2.0\",\"method\":\"session/update\"}\r\n\n{}"))
	f.Add([]byte(strings.Repeat("z", 5000) + "\n{}\n"))
	f.Add([]byte("\n\n\r\n"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		const limit = 1 << 12
		r := NewLineReader(bytes.NewReader(stream), limit)
		total := 0
		for {
			line, err := r.Read()
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, ErrFrame) {
					t.Fatalf("error %v is neither EOF nor a frame error", err)
				}
				return
			}
			if len(line) > limit || bytes.IndexByte(line, '\n') >= 0 || len(bytes.TrimSpace(line)) == 0 {
				t.Fatalf("bad line %q", line)
			}
			total += len(line)
			if total > len(stream) {
				t.Fatalf("read %d bytes of lines from a %d-byte stream", total, len(stream))
			}
		}
	})
}
