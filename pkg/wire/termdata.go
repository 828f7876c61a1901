package wire

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
)

// Terminal output is most of what a busy runner writes, and decoding it with
// encoding/json (which scans each base64 payload twice) cost about half the
// supervisor's CPU time when a program wrote as fast as its terminal
// allowed. So the term.data line has its own encoder (AppendTermData, which
// Encoder uses) and fast decoder (ParseTermData); FuzzTermDataRoundTrip
// holds the two together. (A supervisor that asks for binary frames gets
// no such lines at all: frame.go.)

var (
	termDataPrefix = []byte(`{"t":"term.data","termId":"`)
	termDataClient = []byte(`","clientId":"`)
	termDataData   = []byte(`","data":"`)
	termDataSuffix = []byte(`"}`)
)

// AppendTermData appends the JSON line of a term.data message (with its
// newline) to dst: {"t":"term.data","termId":ID,"clientId":ID,"data":BASE64},
// leaving out an empty clientId or data, exactly as encoding/json would
// write the TermData.
func AppendTermData(dst []byte, termID, clientID string, data []byte) []byte {
	dst = append(dst, `{"t":"term.data","termId":`...)
	dst = appendJSONString(dst, termID)
	if clientID != "" {
		dst = append(dst, `,"clientId":`...)
		dst = appendJSONString(dst, clientID)
	}
	if len(data) > 0 {
		dst = append(dst, `,"data":"`...)
		dst = base64.StdEncoding.AppendEncode(dst, data)
		dst = append(dst, '"')
	}
	return append(dst, "}\n"...)
}

// ParseTermData recognises a term.data line (without its newline) in the
// shape AppendTermData writes for ids of plain characters, a client id and
// some data. Any other shape, or an escape anywhere, reports false: read it
// with Unmarshal, so the two never disagree.
func ParseTermData(line []byte) (*TermData, bool) {
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
	// An empty payload is how the encoder leaves out no field: "data" is
	// omitted when empty, so this shape never has it.
	if err != nil || n == 0 {
		return nil, false
	}
	return &TermData{TermID: termID, ClientID: clientID, Data: data[:n]}, true
}

// plainUntil returns the text of b before sep when that text is a JSON
// string body needing no unescaping: letters, digits and ._-:@ only.
func plainUntil(b, sep []byte) (string, []byte, bool) {
	i := bytes.Index(b, sep)
	if i <= 0 {
		return "", nil, false
	}
	for _, c := range b[:i] {
		if !plainByte(c) {
			return "", nil, false
		}
	}
	return string(b[:i]), b[i+len(sep):], true
}

func plainByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-', c == ':', c == '@':
		return true
	}
	return false
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

// appendJSONString appends s as a JSON string, as encoding/json writes it.
func appendJSONString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte(s[i]) && s[i] != ' ' {
			raw, _ := json.Marshal(s) // a string always encodes
			return append(dst, raw...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
