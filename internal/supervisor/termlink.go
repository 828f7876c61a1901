package supervisor

import (
	"bytes"
	"encoding/base64"

	"github.com/corral-dev/corral/pkg/wire"
)

// Terminal output is most of what a busy runner writes, and decoding it with
// encoding/json (which scans each base64 payload twice) cost about half the
// supervisor's CPU time when a program wrote as fast as its terminal
// allowed. parseTermData reads the one shape the runner's encoder gives a
// term.data message directly.
var (
	termDataPrefix = []byte(`{"t":"term.data","term":{"termId":"`)
	termDataClient = []byte(`","clientId":"`)
	termDataData   = []byte(`","data":"`)
	termDataSuffix = []byte(`"}}`)
)

// parseTermData recognises a term.data line written by wire.Encoder:
// {"t":"term.data","term":{"termId":ID,"clientId":ID,"data":BASE64}} with
// ids of plain characters. Any other shape, or an escape anywhere, reports
// false and goes through the general decoder, so the two never disagree.
func parseTermData(line []byte) (*wire.Message, bool) {
	rest, ok := bytes.CutPrefix(bytes.TrimRight(line, " \t\r\n"), termDataPrefix)
	if !ok {
		return nil, false
	}
	termID, rest, ok := plainUntil(rest, termDataClient)
	if !ok {
		return nil, false
	}
	clientID, rest, ok := plainUntil(rest, termDataData)
	if !ok {
		return nil, false
	}
	payload, ok := bytes.CutSuffix(rest, termDataSuffix)
	if !ok || !base64Text(payload) {
		return nil, false
	}
	data := make([]byte, base64.StdEncoding.DecodedLen(len(payload)))
	n, err := base64.StdEncoding.Decode(data, payload)
	if err != nil {
		return nil, false
	}
	// An empty payload is how the encoder leaves out no field: "data" is
	// omitted when empty, so this shape never has it.
	if n == 0 {
		return nil, false
	}
	return &wire.Message{T: wire.TTermData, Term: &wire.Term{TermID: termID, ClientID: clientID, Data: data[:n]}}, true
}

// plainUntil returns the text of b before sep when that text is a JSON
// string body needing no unescaping: letters, digits and ._-:@ only.
func plainUntil(b, sep []byte) (string, []byte, bool) {
	i := bytes.Index(b, sep)
	if i <= 0 {
		return "", nil, false
	}
	for _, c := range b[:i] {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == ':', c == '@':
		default:
			return "", nil, false
		}
	}
	return string(b[:i]), b[i+len(sep):], true
}

// base64Text reports whether p holds only characters of the standard base64
// alphabet; the decoder alone would also skip line breaks, which JSON does
// not allow in a string.
func base64Text(p []byte) bool {
	for _, c := range p {
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/', c == '=':
		default:
			return false
		}
	}
	return true
}

// TermAck tells the runner how many bytes of a terminal's output its client
// has taken in all (term.ack), for a client opened with a flow-control
// window: the runner holds output back beyond the window.
func (m *Manager) TermAck(id string, t wire.Term) error {
	return m.sendTerm(id, wire.TTermAck, t)
}
