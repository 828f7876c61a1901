package codex

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseMessageClassifies(t *testing.T) {
	cases := []struct {
		name, line string
		kind       messageKind
		id, method string
		isErr      bool
	}{
		{"server request with id 0", `{"method":"item/commandExecution/requestApproval","id":0,"params":{}}`, kindRequest, "0", "item/commandExecution/requestApproval", false},
		{"notification without jsonrpc", `{"method":"turn/started","params":{"threadId":"t"},"emittedAtMs":1}`, kindNotification, "", "turn/started", false},
		{"response", `{"id":3,"result":{}}`, kindResponse, "3", "", false},
		{"error response", `{"error":{"code":-32600,"message":"no active turn to steer"},"id":2}`, kindResponse, "2", "", true},
		{"string id", `{"id":"abc","result":null}`, kindResponse, `"abc"`, "", false},
		{"float id is canonical", `{"id":7.0,"result":1}`, kindResponse, "7", "", false},
		{"jsonrpc member accepted", `{"jsonrpc":"2.0","id":1,"method":"x"}`, kindRequest, "1", "x", false},
		{"error response with null id", `{"id":null,"error":{"code":-32700,"message":"parse error"}}`, kindResponse, "", "", true},
		{"surrounding space", "  {\"method\":\"a\"}\r\n", kindNotification, "", "a", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := parseMessage([]byte(tc.line))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if m.Kind != tc.kind || string(m.ID) != tc.id || m.Method != tc.method || (m.Error != nil) != tc.isErr {
				t.Errorf("got kind %s id %s method %q error %v", m.Kind, m.ID, m.Method, m.Error)
			}
		})
	}
}

func TestParseMessageRefusesWhatCannotBeRouted(t *testing.T) {
	cases := map[string]string{
		"blank":                    "   ",
		"not json":                 "Reconnecting...",
		"array":                    `[{"id":1}]`,
		"neither method nor id":    `{"params":{}}`,
		"empty method":             `{"method":""}`,
		"method and result":        `{"method":"a","id":1,"result":{}}`,
		"fractional id":            `{"id":1.5,"result":{}}`,
		"object id":                `{"id":{},"result":{}}`,
		"bool id":                  `{"id":true,"method":"a"}`,
		"null id request":          `{"id":null,"method":"a"}`,
		"result and error":         `{"id":1,"result":{},"error":{"code":1,"message":"x"}}`,
		"neither result nor error": `{"id":1}`,
		"malformed error":          `{"id":1,"error":"boom"}`,
		"null id success":          `{"id":null,"result":{}}`,
		"truncated":                `{"id":1,"result":{"a":`,
		"method not a string":      `{"method":5}`,
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			if m, err := parseMessage([]byte(line)); err == nil {
				t.Fatalf("parsed %q as %+v, want an error", line, m)
			}
		})
	}
}

// FuzzParseMessage checks that no line panics the parser and that what it
// accepts is consistent: a routable kind, and an encoding that parses back
// to the same message.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":0,"result":{"userAgent":"x"}}`,
		`{"method":"item/agentMessage/delta","params":{"delta":"hi"}}`,
		`{"method":"item/fileChange/requestApproval","id":1,"params":{"itemId":"call_6"}}`,
		`{"error":{"code":-32600,"message":"Not initialized"},"id":0}`,
		`{"id":"x","result":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		m, err := parseMessage(line)
		if err != nil {
			return
		}
		switch m.Kind {
		case kindRequest:
			if m.Method == "" || m.ID == nil {
				t.Fatalf("request without method or id: %+v", m)
			}
		case kindNotification:
			if m.Method == "" || m.ID != nil {
				t.Fatalf("bad notification: %+v", m)
			}
		case kindResponse:
			if (m.Result == nil) == (m.Error == nil) {
				t.Fatalf("response needs exactly one of result and error: %+v", m)
			}
			if m.ID == nil && m.Error == nil {
				t.Fatalf("success response without an id: %+v", m)
			}
		default:
			t.Fatalf("unknown kind %d", m.Kind)
		}
		again, err := parseMessage(encode(t, m))
		if err != nil {
			t.Fatalf("re-encoded %q does not parse: %v", encode(t, m), err)
		}
		if again.Kind != m.Kind || again.Method != m.Method || string(again.ID) != string(m.ID) {
			t.Fatalf("round trip changed %+v into %+v", m, again)
		}
	})
}

func encode(t *testing.T, m message) []byte {
	out := map[string]any{}
	switch {
	case m.ID != nil:
		out["id"] = m.ID
	case m.Kind == kindResponse:
		out["id"] = nil // an error about a line the server could not read
	}
	if m.Method != "" {
		out["method"] = m.Method
	}
	if m.Params != nil {
		out["params"] = m.Params
	}
	if m.Result != nil {
		out["result"] = m.Result
	}
	if m.Error != nil {
		out["error"] = m.Error
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatalf("encode %+v: %v", m, err)
	}
	return b
}

func TestReadLineRefusesOversizedLines(t *testing.T) {
	c := newConn(nopWriteCloser{}, nil)
	c.maxLine = 1 << 20
	big := strings.Repeat("x", c.maxLine+1)
	err := c.serve(strings.NewReader(big+"\n"), func(message) {}, func([]byte, error) {})
	if err == nil || !strings.Contains(err.Error(), "over") {
		t.Fatalf("serve: %v, want the oversized line refused", err)
	}
}
