package wire

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestScanEvent(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		seq     int64
		typ     string
		wantErr bool
	}{
		{"runner order", `{"seq":7,"ts":"2026-01-01T00:00:00Z","type":"turnEnded","data":{"turn":1}}`, 7, "turnEnded", false},
		{"type first", `{"type":"usage","seq":12}`, 12, "usage", false},
		{"data before type holds a decoy", `{"seq":3,"data":{"type":"decoy","x":[1,{"type":"no"}]},"type":"askOpened"}`, 3, "askOpened", false},
		{"spaces", ` { "seq" : 5 , "type" : "stopped" } `, 5, "stopped", false},
		{"escaped quote in skipped string", `{"data":"a\"b","seq":2,"type":"x"}`, 2, "x", false},
		{"escaped quote past the short-string loop", `{"data":"` + strings.Repeat("a", 40) + `\"}","seq":2,"type":"x"}`, 2, "x", false},
		{"escape across the short-string loop's end", `{"data":"` + strings.Repeat("a", 30) + `\\\"}\\","seq":2,"type":"x"}`, 2, "x", false},
		{"escaped backslash before the closing quote", `{"data":"` + strings.Repeat("a", 31) + `\\","seq":2,"type":"x"}`, 2, "x", false},
		{"unclosed long string", `{"seq":2,"data":"` + strings.Repeat("a", 40) + `\"}`, 0, "", true},
		{"no type", `{"seq":4,"data":{}}`, 4, "", false},
		{"no seq", `{"type":"x"}`, 0, "", true},
		{"string seq", `{"seq":"4","type":"x"}`, 0, "", true},
		{"negative seq", `{"seq":-4,"type":"x"}`, 0, "", true},
		{"seq too large", `{"seq":99999999999999999999,"type":"x"}`, 0, "", true},
		{"not an object", `[1,2]`, 0, "", true},
		{"empty", ``, 0, "", true},
		{"truncated", `{"seq":4,"data":{"a":`, 0, "", true},
		{"type not a string", `{"seq":1,"type":3}`, 0, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, typ, err := ScanEvent([]byte(tc.line))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err == nil && (seq != tc.seq || string(typ) != tc.typ) {
				t.Fatalf("got %d %q, want %d %q", seq, typ, tc.seq, tc.typ)
			}
		})
	}
}

func TestParseMirror(t *testing.T) {
	ev := `{"seq":9,"ts":"2026-01-01T00:00:00Z","type":"assistantDelta","data":{"text":"}}"}}`
	tests := []struct {
		name  string
		line  string
		ok    bool
		seq   int64
		event string
	}{
		{"as the runner writes it", strings.TrimSuffix(string(AppendMirror(nil, 9, []byte(ev))), "\n"), true, 9, ev},
		{"trailing CR and spaces", `{"t":"mirror","seq":1,"event":{"seq":1}}` + " \r", true, 1, `{"seq":1}`},
		{"another field after the event", `{"t":"mirror","seq":1,"event":{"seq":1},"x":{}}`, false, 0, ""},
		{"fields in another order", `{"seq":1,"t":"mirror","event":{"seq":1}}`, false, 0, ""},
		{"event not an object", `{"t":"mirror","seq":1,"event":[1]}`, false, 0, ""},
		{"unclosed", `{"t":"mirror","seq":1,"event":{"seq":1}`, false, 0, ""},
		{"not a mirror", `{"t":"commandReply","reqId":"1"}`, false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			seq, event, ok := ParseMirror([]byte(tc.line))
			if ok != tc.ok || seq != tc.seq || string(event) != tc.event {
				t.Fatalf("got %v %d %q, want %v %d %q", ok, seq, event, tc.ok, tc.seq, tc.event)
			}
		})
	}
}

var plainInt = regexp.MustCompile(`^[0-9]+$`)

// topLevel decodes an object's top-level members in order; ok is false for
// anything but an object without repeated keys.
func topLevel(b []byte) (map[string]json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	out := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key := tok.(string)
		if _, dup := out[key]; dup {
			return nil, false
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		out[key] = raw
	}
	return out, true
}

func FuzzScanEvent(f *testing.F) {
	f.Add([]byte(`{"seq":1,"ts":"2026-01-01T00:00:00Z","type":"sessionStarted","data":{"engine":"script"}}`))
	f.Add([]byte(`{"data":{"type":"x"},"type":"y","seq":3}`))
	f.Add([]byte(`{"seq":1`))
	f.Fuzz(func(t *testing.T, line []byte) {
		seq, typ, err := ScanEvent(line)
		if !json.Valid(line) {
			return
		}
		members, ok := topLevel(line)
		if !ok {
			return
		}
		rawSeq, hasSeq := members["seq"]
		if !hasSeq || !plainInt.Match(rawSeq) {
			return
		}
		want, perr := strconv.ParseInt(string(rawSeq), 10, 64)
		if perr != nil {
			return
		}
		if err != nil {
			t.Fatalf("ScanEvent(%q) failed: %v", line, err)
		}
		if seq != want {
			t.Fatalf("ScanEvent(%q) seq = %d, want %d", line, seq, want)
		}
		if rawType, ok := members["type"]; ok && len(rawType) > 1 && rawType[0] == '"' {
			if string(typ) != string(rawType[1:len(rawType)-1]) {
				t.Fatalf("ScanEvent(%q) type = %q, want %s", line, typ, rawType)
			}
		}
	})
}

// FuzzParseMirror checks the fast decoder against the general one:
// whatever it accepts, Unmarshal reads the same way.
func FuzzParseMirror(f *testing.F) {
	f.Add([]byte(`{"t":"mirror","seq":3,"event":{"seq":3,"type":"usage","data":{}}}`), int64(3), []byte(`{"seq":3}`))
	f.Add([]byte(`{"t":"mirror","seq":1,"event":{"a":"}"}}`), int64(0), []byte(`{"a":[{}]}`))
	f.Fuzz(func(t *testing.T, line []byte, _ int64, _ []byte) {
		s, ev, ok := ParseMirror(line)
		if !ok || !json.Valid(line) {
			return
		}
		m, _, err := Unmarshal(line)
		if err != nil {
			t.Fatalf("ParseMirror accepted %q that does not decode: %v", line, err)
		}
		if mm, isMirror := m.(*Mirror); !isMirror || mm.Seq != s || !bytes.Equal(mm.Event, ev) {
			t.Fatalf("ParseMirror(%q) = %d %q, decoder says %+v", line, s, ev, m)
		}
	})
}

// FuzzMirrorRoundTrip checks the encoder and the fast decoder together:
// whatever event line the runner wraps, ParseMirror finds again, byte for
// byte, with its seq, and so does the general decoder.
func FuzzMirrorRoundTrip(f *testing.F) {
	f.Add(int64(3), []byte(`{"seq":3,"ts":"2026-01-01T00:00:00Z","type":"usage","data":{"costUsd":0.01}}`))
	f.Add(int64(0), []byte(`{"a":[{}],"b":"}\"{"}`))
	f.Add(int64(1<<62), []byte(`{"seq":1,"type":"assistantDelta","data":{"text":"\u2028 \\ \n"}}`))
	f.Fuzz(func(t *testing.T, seq int64, event []byte) {
		if seq < 0 || !json.Valid(event) {
			return
		}
		var compact bytes.Buffer
		if json.Compact(&compact, event) != nil || compact.Len() == 0 || compact.Bytes()[0] != '{' {
			return // the log writes compact objects only
		}
		event = compact.Bytes()
		line := AppendMirror(nil, seq, event)
		s, ev, ok := ParseMirror(bytes.TrimSuffix(line, []byte("\n")))
		if !ok || s != seq || !bytes.Equal(ev, event) {
			t.Fatalf("ParseMirror(%q) = %v %d %q", line, ok, s, ev)
		}
		m, _, err := Unmarshal(line)
		if mm, isMirror := m.(*Mirror); err != nil || !isMirror || mm.Seq != seq || !bytes.Equal(mm.Event, event) {
			t.Fatalf("Unmarshal(%q) = %+v, %v", line, m, err)
		}
	})
}

// parseMirrorTwoPass is what ParseMirrorEvent replaces, kept as its
// reference: the mirror line's shape checked by skipping the event, then
// the event scanned again by ScanEvent.
func parseMirrorTwoPass(line []byte) (m MirrorEvent, ok bool) {
	if !bytes.HasPrefix(line, mirrorPrefix) {
		return MirrorEvent{}, false
	}
	s := scanner{b: line, i: len(mirrorPrefix)}
	seq, ok := s.uint()
	if !ok || !bytes.HasPrefix(line[s.i:], mirrorEvent) {
		return MirrorEvent{}, false
	}
	rest := bytes.TrimRight(line[s.i+len(mirrorEvent):], " \t\r")
	ev := scanner{b: rest}
	if len(rest) == 0 || rest[0] != '{' || !ev.skipValue(0) || ev.i != len(rest)-1 || rest[ev.i] != '}' {
		return MirrorEvent{}, false
	}
	m = MirrorEvent{Seq: seq, Event: rest[:ev.i]}
	m.EventSeq, m.Type, m.Err = ScanEvent(m.Event)
	return m, true
}

func TestParseMirrorEvent(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		ok      bool
		seq     int64
		typ     string
		wantErr bool
	}{
		{"as the runner writes it", `{"t":"mirror","seq":9,"event":{"seq":9,"ts":"2026-01-01T00:00:00Z","type":"assistantDelta","data":{"text":"}}"}}}`, true, 9, "assistantDelta", false},
		{"type first, decoy in data", `{"t":"mirror","seq":3,"event":{"data":{"type":"no","seq":1},"type":"usage","seq":3}}`, true, 3, "usage", false},
		{"members after seq and type are skipped, not read", `{"t":"mirror","seq":2,"event":{"seq":2,"type":"x","seq":"no","type":1}}`, true, 2, "x", false},
		{"event without seq", `{"t":"mirror","seq":1,"event":{"type":"x"}}`, true, 0, "", true},
		{"empty event", `{"t":"mirror","seq":1,"event":{}}`, true, 0, "", true},
		{"type not a string", `{"t":"mirror","seq":1,"event":{"seq":1,"type":[]}}`, true, 0, "", true},
		{"digits then junk before the type", `{"t":"mirror","seq":1,"event":{"seq":1x,"type":"a"}}`, true, 0, "", true},
		{"digits then junk after the type", `{"t":"mirror","seq":1,"event":{"type":"a","seq":1x}}`, true, 1, "a", false},
		{"unclosed event", `{"t":"mirror","seq":1,"event":{"seq":1,"type":"a"}`, false, 0, "", false},
		{"something after the event", `{"t":"mirror","seq":1,"event":{"seq":1},"x":1}`, false, 0, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := ParseMirrorEvent([]byte(tc.line))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if (m.Err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", m.Err, tc.wantErr)
			}
			if m.EventSeq != tc.seq || string(m.Type) != tc.typ {
				t.Fatalf("got %d %q, want %d %q", m.EventSeq, m.Type, tc.seq, tc.typ)
			}
			want, _ := parseMirrorTwoPass([]byte(tc.line))
			if !sameMirrorEvent(m, want) {
				t.Fatalf("one pass %+v, two passes %+v", m, want)
			}
		})
	}
}

func sameMirrorEvent(a, b MirrorEvent) bool {
	return a.Seq == b.Seq && bytes.Equal(a.Event, b.Event) && a.EventSeq == b.EventSeq &&
		bytes.Equal(a.Type, b.Type) && (a.Type == nil) == (b.Type == nil) && (a.Err == nil) == (b.Err == nil)
}

// FuzzParseMirrorEvent holds the one-pass reader to the two passes it
// replaces: the same lines accepted, the same event, and of the event the
// same seq and type, or an error where ScanEvent has one.
func FuzzParseMirrorEvent(f *testing.F) {
	f.Add([]byte(`{"t":"mirror","seq":3,"event":{"seq":3,"ts":"2026-01-01T00:00:00Z","type":"usage","data":{}}}`))
	f.Add([]byte(`{"t":"mirror","seq":1,"event":{"data":{"type":"x"},"type":"y","seq":1}}`))
	f.Add([]byte(`{"t":"mirror","seq":1,"event":{"seq":1x,"type":"a"}}`))
	f.Add([]byte(`{"t":"mirror","seq":1,"event":{"type":"a","seq":99999999999999999999}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := ParseMirrorEvent(line)
		want, wantOK := parseMirrorTwoPass(line)
		if ok != wantOK || !sameMirrorEvent(got, want) {
			t.Fatalf("ParseMirrorEvent(%q) = %+v %v, two passes %+v %v", line, got, ok, want, wantOK)
		}
	})
}
