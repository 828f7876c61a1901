package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func TestAppendStateIsWhatEncodingJSONWrites(t *testing.T) {
	for _, st := range []StateReport{
		{State: StateIdle},
		{State: StateWorking, Turn: 26, Queued: 1, OpenAsks: 2, PendingEdits: 3, Settling: true},
		{State: StateIdle, Turn: 3, Queued: 2, Held: true},
		{State: StateIdle, Turn: 3, Queued: 2, Settling: true, Held: true},
		{State: StateWaitingForApproval, Turn: 1 << 40, OpenAsks: 1},
		{State: StateFailed, Turn: -1, Queued: -2},
		{State: "", Turn: 1},
		{State: `a"b<&>` + "\u2028", Queued: 1},
		{State: "bad utf-8 \xff"},
	} {
		want, err := appendJSON(nil, "", &st)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendState(nil, st); !bytes.Equal(got, want) {
			t.Errorf("AppendState(%+v) =\n%s\nencoding/json writes\n%s", st, got, want)
		}
		if got := encodeLine(t, &st); !bytes.Equal(got, want) {
			t.Errorf("AppendMessage(%+v) =\n%s\nencoding/json writes\n%s", st, got, want)
		}
	}
}

func TestParseStateReadsWhatTheEncoderWrites(t *testing.T) {
	for _, want := range []StateReport{
		{State: StateIdle, Turn: 25, Queued: 1, Settling: true},
		{State: StateWorking, Turn: 26},
		{State: StateWaitingForReview, Turn: 3, PendingEdits: 2},
		{State: StateStopped, Turn: 3, Queued: 1, Held: true},
		{State: StateIdle, Turn: 4, Queued: 1, Settling: true, Held: true},
	} {
		line := encodeLine(t, &want)
		got, ok := ParseState(bytes.TrimSuffix(line, []byte("\n")))
		if !ok || got != want {
			t.Fatalf("ParseState(%q) = %+v, %v", line, got, ok)
		}
	}
}

func TestParseStateLeavesOtherShapesToTheDecoder(t *testing.T) {
	tests := map[string][]byte{
		"another type":         []byte(`{"t":"mirror","seq":1,"event":{"seq":1}}`),
		"a negative count":     []byte(`{"t":"state","state":"idle","turn":-1,"queued":0,"openAsks":0,"pendingEdits":0}`),
		"an escaped state":     []byte(`{"t":"state","state":"id\u006ce","turn":1,"queued":0,"openAsks":0,"pendingEdits":0}`),
		"an empty state":       []byte(`{"t":"state","state":"","turn":1,"queued":0,"openAsks":0,"pendingEdits":0}`),
		"fields reordered":     []byte(`{"t":"state","state":"idle","queued":0,"turn":1,"openAsks":0,"pendingEdits":0}`),
		"a field missing":      []byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0}`),
		"an extra field":       []byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0,"x":1}`),
		"settling false":       []byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0,"settling":false}`),
		"held false":           []byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0,"held":false}`),
		"held before settling": []byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0,"held":true,"settling":true}`),
		"a leading zero":       []byte(`{"t":"state","state":"idle","turn":01,"queued":0,"openAsks":0,"pendingEdits":0}`),
		"a fraction":           []byte(`{"t":"state","state":"idle","turn":1.5,"queued":0,"openAsks":0,"pendingEdits":0}`),
		"a count past int64":   []byte(`{"t":"state","state":"idle","turn":99999999999999999999,"queued":0,"openAsks":0,"pendingEdits":0}`),
		"a reqId":              []byte(`{"t":"state","reqId":"1","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0}`),
		"trailing garbage":     []byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0}x`),
		"no closing brace":     []byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0`),
		"an unterminated word": []byte(`{"t":"state","state":"idle`),
	}
	for name, line := range tests {
		if st, ok := ParseState(line); ok {
			t.Errorf("%s: took %q as %+v", name, line, st)
		}
	}
}

// FuzzParseState checks the fast decoder against the general one:
// whatever it accepts, Unmarshal reads the same way.
func FuzzParseState(f *testing.F) {
	f.Add(encodeLine(f, &StateReport{State: StateWorking, Turn: 3, Queued: 1, Settling: true}))
	f.Add([]byte(`{"t":"state","state":"idle","turn":1,"queued":0,"openAsks":0,"pendingEdits":0} `))
	f.Add([]byte(`{"t":"state","state":"idle","turn":01,"queued":0,"openAsks":0,"pendingEdits":0}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := ParseState(line)
		if !ok {
			return
		}
		want, _, err := Unmarshal(line)
		if err != nil {
			t.Fatalf("took %q, which the decoder refuses: %v", line, err)
		}
		if !reflect.DeepEqual(&got, want) {
			t.Fatalf("%q: fast path %+v, decoder %+v", line, got, want)
		}
	})
}

// FuzzStateRoundTrip checks the encoder and the fast decoder together:
// what AppendState writes, the general decoder reads back exactly, and the
// fast one too whenever the state is a plain word and no count is
// negative.
func FuzzStateRoundTrip(f *testing.F) {
	f.Add("working", 26, 1, 0, 0, true, false)
	f.Add("idle", 0, 0, 0, 0, false, false)
	f.Add("idle", 4, 2, 0, 0, false, true)
	f.Add("a\"b<&>", 1, 2, 3, 4, false, true)
	f.Add("idle", -1, 0, 0, 0, false, false)
	f.Fuzz(func(t *testing.T, state string, turn, queued, asks, edits int, settling, held bool) {
		st := StateReport{State: State(state), Turn: turn, Queued: queued, OpenAsks: asks, PendingEdits: edits, Settling: settling, Held: held}
		line := AppendState(nil, st)
		if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
			t.Fatalf("%q is not one line", line)
		}
		line = line[:len(line)-1]
		m, _, err := Unmarshal(line)
		if err != nil {
			t.Fatalf("Unmarshal(%q): %v", line, err)
		}
		want := st
		want.State = State(asJSONString(t, state))
		if got := *m.(*StateReport); got != want {
			t.Fatalf("Unmarshal(%q) = %+v, want %+v", line, got, want)
		}
		fast, ok := ParseState(line)
		plain := plainWord(state) && turn >= 0 && queued >= 0 && asks >= 0 && edits >= 0
		if ok != plain {
			t.Fatalf("ParseState(%q) took it: %v, want %v", line, ok, plain)
		}
		if ok && fast != want {
			t.Fatalf("ParseState(%q) = %+v, decoder %+v", line, fast, want)
		}
	})
}

// BenchmarkStateLine encodes and decodes a state line through its own
// encoder and fast decoder, and through encoding/json beside them.
func BenchmarkStateLine(b *testing.B) {
	st := StateReport{State: StateIdle, Turn: 25, Queued: 1, Settling: true}
	line := AppendState(nil, st)
	line = line[:len(line)-1]
	b.Run("encode/fast", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for range b.N {
			buf = AppendState(buf[:0], st)
		}
	})
	b.Run("encode/json", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for range b.N {
			buf, _ = appendJSON(buf[:0], "", &st)
		}
	})
	b.Run("decode/fast", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, ok := ParseState(line); !ok {
				b.Fatal("not taken")
			}
		}
	})
	b.Run("decode/json", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			if _, _, err := Unmarshal(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func encodeLine(t testing.TB, m Message) []byte {
	line, err := AppendMessage(nil, "", m)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

// asJSONString is s as it comes back from a JSON string: invalid UTF-8
// replaced.
func asJSONString(t *testing.T, s string) string {
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back string
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	return back
}
