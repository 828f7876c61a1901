package supervisor

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

func encodeLine(t testing.TB, m *wire.Message) []byte {
	var buf bytes.Buffer
	if err := wire.NewEncoder(&buf).Encode(m); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestParseTermDataReadsWhatTheEncoderWrites(t *testing.T) {
	payloads := [][]byte{{0}, []byte("hello\r\n"), bytes.Repeat([]byte{0xff, 0, '\n', '"', '\\'}, 1000), []byte("\x1b[?1049h")}
	for _, p := range payloads {
		want := &wire.Message{T: wire.TTermData, Term: &wire.Term{TermID: "main", ClientID: "ws-0123abcd", Data: p}}
		got, ok := parseTermData(encodeLine(t, want))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("payload %q: got %+v %v", p, got, ok)
		}
	}
}

func TestParseTermDataLeavesOtherShapesToTheDecoder(t *testing.T) {
	exit := 0
	tests := map[string][]byte{
		"another type":      encodeLine(t, &wire.Message{T: wire.TTermExit, Term: &wire.Term{TermID: "main", ClientID: "c", ExitCode: &exit}}),
		"no client":         encodeLine(t, &wire.Message{T: wire.TTermData, Term: &wire.Term{TermID: "main", Data: []byte("x")}}),
		"no data":           encodeLine(t, &wire.Message{T: wire.TTermData, Term: &wire.Term{TermID: "main", ClientID: "c"}}),
		"escaped id":        encodeLine(t, &wire.Message{T: wire.TTermData, Term: &wire.Term{TermID: "a\"b", ClientID: "c", Data: []byte("x")}}),
		"an extra field":    []byte(`{"t":"term.data","term":{"termId":"m","clientId":"c","data":"eA==","rows":3}}`),
		"escaped base64":    []byte(`{"t":"term.data","term":{"termId":"m","clientId":"c","data":"eA\u003d\u003d"}}`),
		"a raw line break":  []byte("{\"t\":\"term.data\",\"term\":{\"termId\":\"m\",\"clientId\":\"c\",\"data\":\"eA\r==\"}}"),
		"bad base64":        []byte(`{"t":"term.data","term":{"termId":"m","clientId":"c","data":"e"}}`),
		"trailing garbage":  []byte(`{"t":"term.data","term":{"termId":"m","clientId":"c","data":"eA=="}}x`),
		"a reqId":           []byte(`{"t":"term.data","reqId":"1","term":{"termId":"m","clientId":"c","data":"eA=="}}`),
		"fields reordered":  []byte(`{"t":"term.data","term":{"clientId":"c","termId":"m","data":"eA=="}}`),
		"a mirror":          []byte(`{"t":"mirror","seq":1,"event":{"seq":1}}`),
		"nothing but space": []byte("  \n"),
	}
	for name, line := range tests {
		if m, ok := parseTermData(line); ok {
			t.Errorf("%s: took %q as %+v", name, line, m.Term)
		}
	}
}

// FuzzParseTermData checks the fast path against the general decoder:
// whatever it accepts, encoding/json reads the same way.
func FuzzParseTermData(f *testing.F) {
	f.Add(encodeLine(f, &wire.Message{T: wire.TTermData, Term: &wire.Term{TermID: "main", ClientID: "ws-1", Data: []byte("hi\r\n")}}))
	f.Add([]byte(`{"t":"term.data","term":{"termId":"m","clientId":"c","data":"eA=="}}`))
	f.Add([]byte(`{"t":"term.data","term":{"termId":"m","clientId":"c","data":"eA=\n="}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		got, ok := parseTermData(line)
		if !ok {
			return
		}
		var want wire.Message
		if err := json.Unmarshal(line, &want); err != nil {
			t.Fatalf("took %q, which encoding/json refuses: %v", line, err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Fatalf("%q: fast path %+v, decoder %+v", line, got.Term, want.Term)
		}
	})
}
