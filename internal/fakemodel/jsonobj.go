package fakemodel

import (
	"bytes"
	"encoding/json"
)

// obj is a JSON object that keeps its keys in the order written, so the
// events the server sends read like the real APIs' ("type" first).
type obj []field

type field struct {
	key   string
	value any
}

// MarshalJSON writes the fields in order.
func (o obj) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	buf.WriteByte('{')
	for i, f := range o {
		if i > 0 {
			buf.WriteByte(',')
		}
		key, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		buf.Write(key)
		buf.WriteByte(':')
		value, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		buf.Write(value)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// mustJSON marshals values built by this package from strings, numbers and
// obj; those cannot fail to marshal, so a failure is a bug worth a loud
// placeholder rather than a silently empty event.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(`{"error":"fakemodel: cannot encode event"}`)
	}
	return b
}
