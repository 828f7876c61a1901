package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

func encodeLine(t testing.TB, m Message) []byte {
	line, err := AppendMessage(nil, "", m)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func TestAppendTermDataIsWhatEncodingJSONWrites(t *testing.T) {
	for _, d := range []TermData{
		{TermID: "main", ClientID: "ws-0123abcd", Data: []byte("hello\r\n")},
		{TermID: "main", Data: []byte{0}},
		{TermID: "main", ClientID: "c"},
		{TermID: "a\"b<&>\u2028", ClientID: "c d\x01", Data: []byte{0xff}},
		{TermID: "bad utf-8 \xff", Data: []byte("x")},
	} {
		body, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		want := append(append([]byte(`{"t":"term.data",`), body[1:]...), '\n')
		if got := AppendTermData(nil, d.TermID, d.ClientID, d.Data); !bytes.Equal(got, want) {
			t.Errorf("AppendTermData(%q, %q) =\n%s\nencoding/json writes\n%s", d.TermID, d.ClientID, got, want)
		}
	}
}

func TestParseTermDataReadsWhatTheEncoderWrites(t *testing.T) {
	payloads := [][]byte{{0}, []byte("hello\r\n"), bytes.Repeat([]byte{0xff, 0, '\n', '"', '\\'}, 1000), []byte("\x1b[?1049h")}
	for _, p := range payloads {
		want := &TermData{TermID: "main", ClientID: "ws-0123abcd", Data: p}
		got, ok := ParseTermData(encodeLine(t, want))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("payload %q: got %+v %v", p, got, ok)
		}
	}
}

func TestParseTermDataLeavesOtherShapesToTheDecoder(t *testing.T) {
	exit := 0
	tests := map[string][]byte{
		"another type":      encodeLine(t, &TermExit{TermID: "main", ClientID: "c", ExitCode: &exit}),
		"no client":         encodeLine(t, &TermData{TermID: "main", Data: []byte("x")}),
		"no data":           encodeLine(t, &TermData{TermID: "main", ClientID: "c"}),
		"escaped id":        encodeLine(t, &TermData{TermID: "a\"b", ClientID: "c", Data: []byte("x")}),
		"an extra field":    []byte(`{"t":"term.data","termId":"m","clientId":"c","data":"eA==","rows":3}`),
		"escaped base64":    []byte(`{"t":"term.data","termId":"m","clientId":"c","data":"eA\u003d\u003d"}`),
		"a raw line break":  []byte("{\"t\":\"term.data\",\"termId\":\"m\",\"clientId\":\"c\",\"data\":\"eA\r==\"}"),
		"bad base64":        []byte(`{"t":"term.data","termId":"m","clientId":"c","data":"e"}`),
		"trailing garbage":  []byte(`{"t":"term.data","termId":"m","clientId":"c","data":"eA=="}x`),
		"a reqId":           []byte(`{"t":"term.data","reqId":"1","termId":"m","clientId":"c","data":"eA=="}`),
		"fields reordered":  []byte(`{"t":"term.data","clientId":"c","termId":"m","data":"eA=="}`),
		"a mirror":          []byte(`{"t":"mirror","seq":1,"event":{"seq":1}}`),
		"nothing but space": []byte("  \n"),
	}
	for name, line := range tests {
		if d, ok := ParseTermData(line); ok {
			t.Errorf("%s: took %q as %+v", name, line, d)
		}
	}
}

// FuzzParseTermData checks the fast decoder against the general one:
// whatever it accepts, Unmarshal reads the same way.
func FuzzParseTermData(f *testing.F) {
	f.Add(encodeLine(f, &TermData{TermID: "main", ClientID: "ws-1", Data: []byte("hi\r\n")}))
	f.Add([]byte(`{"t":"term.data","termId":"m","clientId":"c","data":"eA=="}`))
	f.Add([]byte(`{"t":"term.data","termId":"m","clientId":"c","data":"eA=\n="}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := ParseTermData(line)
		if !ok {
			return
		}
		want, _, err := Unmarshal(line)
		if err != nil {
			t.Fatalf("took %q, which the decoder refuses: %v", line, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: fast path %+v, decoder %+v", line, got, want)
		}
	})
}

// FuzzTermDataRoundTrip checks the encoder and the fast decoder together:
// what AppendTermData writes, the general decoder reads back exactly, and
// the fast one too whenever the ids are plain and there is output.
func FuzzTermDataRoundTrip(f *testing.F) {
	f.Add("main", "ws-0123abcd", []byte("ls\r\n"))
	f.Add("main", "", []byte{0, 0xff})
	f.Add("a\"b", "c\\d", []byte("\x1b[0m"))
	f.Add("t", "c", []byte{})
	f.Fuzz(func(t *testing.T, termID, clientID string, data []byte) {
		line := AppendTermData(nil, termID, clientID, data)
		if bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("%q is not one line", line)
		}
		m, _, err := Unmarshal(line)
		if err != nil {
			t.Fatalf("Unmarshal(%q): %v", line, err)
		}
		got := m.(*TermData)
		wantID, wantClient := asJSONString(t, termID), asJSONString(t, clientID)
		if got.TermID != wantID || got.ClientID != wantClient || !bytes.Equal(got.Data, data) {
			t.Fatalf("Unmarshal(%q) = %+v", line, got)
		}
		fast, ok := ParseTermData(line)
		plain := termID != "" && clientID != "" && len(data) > 0 && allPlain(termID) && allPlain(clientID)
		if ok != plain {
			t.Fatalf("ParseTermData(%q) took it: %v, want %v", line, ok, plain)
		}
		if ok && !reflect.DeepEqual(fast, got) {
			t.Fatalf("ParseTermData(%q) = %+v, decoder %+v", line, fast, got)
		}
	})
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

func allPlain(s string) bool {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) {
			return false
		}
	}
	return true
}
