package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// frameOf builds a frame by hand, so the tests do not trust the encoder.
func frameOf(kind byte, termID, clientID string, data []byte, end byte) []byte {
	var h [TermFrameHeaderLen]byte
	h[0], h[1] = TermFrameMarker, kind
	binary.BigEndian.PutUint16(h[2:], uint16(len(termID)))
	binary.BigEndian.PutUint16(h[4:], uint16(len(clientID)))
	binary.BigEndian.PutUint32(h[6:], uint32(len(data)))
	b := append(h[:], termID...)
	b = append(b, clientID...)
	b = append(b, data...)
	return append(b, end)
}

func TestTermFrameLayout(t *testing.T) {
	// The example in docs/wire.md.
	got, err := AppendTermFrame(nil, "main", "sup-1", []byte("ls\r\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		"ff",         // marker
		"01",         // kind: term.data
		"0004",       // len(termId)
		"0005",       // len(clientId)
		"00000004",   // len(data)
		"6d61696e",   // "main"
		"7375702d31", // "sup-1"
		"6c730d0a",   // "ls\r\n"
		"0a",         // newline
	}, "")
	if hex.EncodeToString(got) != want {
		t.Fatalf("frame\n got %x\nwant %s", got, want)
	}
}

func TestTermFrameRoundTrips(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	cases := []struct {
		name             string
		termID, clientID string
		data             []byte
	}{
		{"every byte value", "main", "sup-0123456789abcdef", all},
		{"newlines and a marker in the data", "t", "c", []byte("\n\xff\x01\n{\"t\":\"term.exit\"}\n")},
		{"no client: every client", "main", "", []byte("x")},
		{"empty data", "main", "c", nil},
		{"large", "main", "c", bytes.Repeat([]byte("0123456789"), 100_000)},
		{"ids of any bytes", "t\"\\\n\xff", "c\x00", []byte("y")},
	}
	var stream []byte
	for _, c := range cases {
		var err error
		if stream, err = AppendTermFrame(stream, c.termID, c.clientID, c.data); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		// A JSON line between frames is read as a line.
		stream = append(stream, `{"t":"mirror","seq":1,"event":{}}`+"\n"...)
	}
	lr := NewLineReader(bytes.NewReader(stream), 0)
	lr.AcceptTermFrames()
	for _, c := range cases {
		line, f, err := lr.NextRecord()
		if err != nil || f == nil || line != nil {
			t.Fatalf("%s: line %q, frame %v, err %v", c.name, line, f, err)
		}
		if f.TermID != c.termID || f.ClientID != c.clientID || !bytes.Equal(f.Data, c.data) {
			t.Errorf("%s: got %q %q %d bytes, want %q %q %d bytes", c.name, f.TermID, f.ClientID, len(f.Data), c.termID, c.clientID, len(c.data))
		}
		line, f, err = lr.NextRecord()
		if err != nil || f != nil || string(line) != `{"t":"mirror","seq":1,"event":{}}` {
			t.Fatalf("%s: the line after: %q, frame %v, err %v", c.name, line, f, err)
		}
	}
	if _, _, err := lr.NextRecord(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the last record: %v, want EOF", err)
	}
}

func TestTermFrameDataIsTheCallers(t *testing.T) {
	stream, _ := AppendTermFrame(nil, "t", "c", []byte("first"))
	stream, _ = AppendTermFrame(stream, "t", "c", []byte("again"))
	lr := NewLineReader(bytes.NewReader(stream), 0)
	lr.AcceptTermFrames()
	_, first, _ := lr.NextRecord()
	_, second, _ := lr.NextRecord()
	if string(first.Data) != "first" || string(second.Data) != "again" {
		t.Fatalf("a later frame overwrote an earlier one's data: %q, %q", first.Data, second.Data)
	}
}

// TestTermFrameDataComesFromAllocPayloads: with AllocPayloads, each frame's
// data lands in the buffer the allocator gave for its exact length, large
// frames included (read partly past the reader's buffer), and a skipped
// frame takes none.
func TestTermFrameDataComesFromAllocPayloads(t *testing.T) {
	large := bytes.Repeat([]byte("0123456789"), 20_000)
	stream, _ := AppendTermFrame(nil, "t", "c", []byte("small"))
	stream = append(stream, frameOf(0x7f, "t", "c", []byte("unknown kind"), '\n')...)
	stream, _ = AppendTermFrame(stream, "t", "c", large)
	var given [][]byte
	lr := NewLineReader(bytes.NewReader(stream), 0)
	lr.AcceptTermFrames()
	lr.AllocPayloads(func(n int) []byte {
		p := make([]byte, n, n+8)
		given = append(given, p)
		return p
	})
	var got [][]byte
	for {
		_, f, err := lr.NextRecord()
		if errors.Is(err, io.EOF) {
			break
		}
		var le *LineError
		if errors.As(err, &le) {
			continue // the frame of an unknown kind
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f.Data)
	}
	if len(got) != 2 || len(given) != 2 || string(got[0]) != "small" || !bytes.Equal(got[1], large) {
		t.Fatalf("got %d frames from %d buffers", len(got), len(given))
	}
	for i := range got {
		if &got[i][0] != &given[i][0] || cap(got[i]) != len(got[i])+8 {
			t.Errorf("frame %d: data is not in the buffer the allocator gave", i)
		}
	}
}

func TestAppendTermFrameRefuses(t *testing.T) {
	long := strings.Repeat("x", maxFrameID+1)
	for name, f := range map[string]func() ([]byte, error){
		"no termId":          func() ([]byte, error) { return AppendTermFrame(nil, "", "c", nil) },
		"termId too long":    func() ([]byte, error) { return AppendTermFrame(nil, long, "c", nil) },
		"clientId too long":  func() ([]byte, error) { return AppendTermFrame(nil, "t", long, nil) },
		"longer than a line": func() ([]byte, error) { return AppendTermFrame(nil, "t", "c", make([]byte, DefaultMaxLine)) },
	} {
		b, err := f()
		if !errors.Is(err, ErrBadFrame) || len(b) != 0 {
			t.Errorf("%s: %d bytes, %v; want nothing and ErrBadFrame", name, len(b), err)
		}
	}
}

// longerThanItIs is a frame whose header promises more data than follows.
func longerThanItIs() []byte {
	b := frameOf(frameKindTermData, "t", "c", []byte("data"), '\n')
	binary.BigEndian.PutUint32(b[6:], 1000)
	return b
}

// TestBadTermFrames checks what the reader does with each kind of broken
// frame: a frame read whole is skipped and the next message is read; a
// frame whose end is not where its lengths say stops the stream for good.
func TestBadTermFrames(t *testing.T) {
	next := []byte(`{"t":"bye"}` + "\n")
	good := frameOf(frameKindTermData, "t", "c", []byte("ok"), '\n')
	cases := []struct {
		name    string
		in      []byte
		max     int
		skipped func(*LineError) bool // nil: fatal
	}{
		{"unknown kind", frameOf(0x7f, "t", "c", []byte("data"), '\n'), 0,
			func(le *LineError) bool { return errors.Is(le, ErrBadFrame) }},
		{"no termId", frameOf(frameKindTermData, "", "c", []byte("data"), '\n'), 0,
			func(le *LineError) bool { return errors.Is(le, ErrBadFrame) }},
		{"longer than the limit", frameOf(frameKindTermData, "t", "c", make([]byte, 100), '\n'), 64,
			func(le *LineError) bool { return le.TooLong && le.Size == TermFrameHeaderLen+2+100 }},
		{"no newline at its end", frameOf(frameKindTermData, "t", "c", []byte("data"), 'x'), 0, nil},
		{"lengths past the end of the stream", longerThanItIs(), 0, nil},
		{"header cut short", []byte{TermFrameMarker, frameKindTermData, 0}, 0, nil},
		{"data cut short", frameOf(frameKindTermData, "t", "c", []byte("data"), '\n')[:TermFrameHeaderLen+4], 0, nil},
		{"bad frame without its newline", frameOf(0x7f, "t", "c", []byte("data"), 'x'), 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append(append(append([]byte{}, good...), c.in...), next...)
			d := NewDecoder(bytes.NewReader(in), c.max)
			d.AcceptTermFrames()
			if m, _, err := d.Decode(); err != nil || m.Type() != TTermData || string(m.(*TermData).Data) != "ok" {
				t.Fatalf("the good frame first: %+v, %v", m, err)
			}
			_, _, err := d.Decode()
			var le *LineError
			var fe *FrameError
			switch {
			case c.skipped != nil:
				if !errors.As(err, &le) || !c.skipped(le) {
					t.Fatalf("got %v, want the frame skipped with a matching *LineError", err)
				}
				if le.Line != 2 {
					t.Errorf("skipped record %d, want 2", le.Line)
				}
				if m, _, err := d.Decode(); err != nil || m.Type() != TBye {
					t.Fatalf("after the skipped frame: %+v, %v; want bye", m, err)
				}
			default:
				if !errors.As(err, &fe) || !errors.Is(err, ErrFrameSync) || errors.As(err, &le) {
					t.Fatalf("got %v (%T), want a *FrameError wrapping ErrFrameSync", err, err)
				}
				// Nothing more is read, ever: not even the message after.
				for range 2 {
					if _, _, again := d.Decode(); again != err {
						t.Fatalf("after a lost sync: %v, want the same error again", again)
					}
				}
			}
		})
	}
}

func TestReaderWithoutFramesSeesALine(t *testing.T) {
	in, _ := AppendTermFrame(nil, "t", "c", []byte("x"))
	in = append(in, `{"t":"bye"}`+"\n"...)
	d := NewDecoder(bytes.NewReader(in), 0)
	_, _, err := d.Decode()
	var le *LineError
	if !errors.As(err, &le) {
		t.Fatalf("a frame to a reader that did not ask for them: %v, want a skipped line", err)
	}
	if m, _, err := d.Decode(); err != nil || m.Type() != TBye {
		t.Fatalf("then %+v, %v; want bye", m, err)
	}
}

func TestEncoderWritesFramesOnlyWhenAsked(t *testing.T) {
	code := 0
	type sent struct {
		reqID string
		m     Message
	}
	msgs := []sent{
		{"1", &TermOpened{TermID: "t", ClientID: "c", Role: "owner"}},
		{"", &TermData{TermID: "t", ClientID: "c", Data: []byte("out\xff\n")}},
		// What a frame cannot carry goes as JSON.
		{"x", &TermData{TermID: "t", ClientID: "c", Data: []byte("with a reqId")}},
		{"", &TermData{TermID: "", ClientID: "c", Data: []byte("no termId")}},
		{"", &TermData{TermID: strings.Repeat("t", maxFrameID+1), Data: []byte("an id too long")}},
		{"", &TermExit{TermID: "t", ClientID: "c", ExitCode: &code}},
	}
	for _, frames := range []bool{false, true} {
		var buf bytes.Buffer
		enc := NewEncoder(&buf)
		enc.SetTermFrames(frames)
		for _, s := range msgs {
			if err := enc.EncodeID(s.reqID, s.m); err != nil {
				t.Fatal(err)
			}
		}
		if got := bytes.Count(buf.Bytes(), []byte{TermFrameMarker, frameKindTermData}); frames && got != 1 || !frames && got != 0 {
			t.Errorf("frames %v: %d frames written", frames, got)
		}
		d := NewDecoder(&buf, 0)
		d.AcceptTermFrames()
		for _, want := range msgs {
			got, reqID, err := d.Decode()
			if err != nil {
				t.Fatalf("frames %v: %v", frames, err)
			}
			if reqID != want.reqID || !reflect.DeepEqual(got, want.m) {
				t.Errorf("frames %v: got %q %+v, want %q %+v", frames, reqID, got, want.reqID, want.m)
			}
		}
	}
}

// FuzzTermFrames feeds the frame-accepting reader arbitrary bytes. It must
// never panic or hand out more than the limit; every frame it returns must
// be exactly what AppendTermFrame writes for it, at the place it was read;
// and once it reports lost sync it must report nothing else.
func FuzzTermFrames(f *testing.F) {
	good, _ := AppendTermFrame(nil, "main", "sup-1", []byte("ls\r\n"))
	f.Add(good)
	f.Add(append(append([]byte{}, good...), `{"t":"bye"}`+"\n"...))
	f.Add(frameOf(0x7f, "t", "c", []byte("data"), '\n'))
	f.Add(frameOf(frameKindTermData, "t", "c", []byte("data"), 'x'))
	f.Add(frameOf(frameKindTermData, "t", "c", make([]byte, 80), '\n'))
	f.Add([]byte{TermFrameMarker})
	f.Add([]byte("{\"t\":\"bye\"}\n\xff\x01\x00\x01\x00\x00\x00\x00\x00\x00t\n"))
	const limit = 64
	f.Fuzz(func(t *testing.T, in []byte) {
		r := &countingReader{r: bytes.NewReader(in)}
		lr := NewLineReader(r, limit)
		lr.AcceptTermFrames()
		var fatal error
		for range 1000 {
			start := r.n - int64(lr.r.Buffered())
			line, fr, err := lr.NextRecord()
			if fatal != nil {
				if err != fatal {
					t.Fatalf("after %v: %v", fatal, err)
				}
				return
			}
			var le *LineError
			var fe *FrameError
			switch {
			case errors.Is(err, io.EOF):
				return
			case errors.As(err, &fe):
				fatal = err
				continue
			case errors.As(err, &le):
				continue
			case err != nil:
				t.Fatalf("unexpected error %v", err)
			case fr != nil:
				if len(fr.Data) > limit || len(fr.TermID) == 0 {
					t.Fatalf("frame of %d bytes, termId %q, past the limit %d", len(fr.Data), fr.TermID, limit)
				}
				want, err := AppendTermFrame(nil, fr.TermID, fr.ClientID, fr.Data)
				if err != nil {
					t.Fatal(err)
				}
				if start < 0 || int(start)+len(want) > len(in) || !bytes.Equal(in[start:int(start)+len(want)], want) {
					t.Fatalf("frame %q %q %q is not what the input holds at %d", fr.TermID, fr.ClientID, fr.Data, start)
				}
			case len(line) > limit+1: // +1: a last line without its newline
				t.Fatalf("line of %d bytes past the limit %d", len(line), limit)
			}
		}
	})
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
