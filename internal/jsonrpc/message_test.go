package jsonrpc

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestParseMessageClassifies(t *testing.T) {
	cases := []struct {
		name, line string
		kind       Kind
		id, method string
		isErr      bool
	}{
		{"server request with id 0", `{"method":"item/commandExecution/requestApproval","id":0,"params":{}}`, KindRequest, "0", "item/commandExecution/requestApproval", false},
		{"notification without jsonrpc", `{"method":"turn/started","params":{"threadId":"t"},"emittedAtMs":1}`, KindNotification, "", "turn/started", false},
		{"reply", `{"id":3,"result":{}}`, KindReply, "3", "", false},
		{"error reply", `{"error":{"code":-32600,"message":"no active turn to steer"},"id":2}`, KindReply, "2", "", true},
		{"string id", `{"id":"abc","result":null}`, KindReply, `"abc"`, "", false},
		{"float id is canonical", `{"id":7.0,"result":1}`, KindReply, "7", "", false},
		{"jsonrpc member accepted", `{"jsonrpc":"2.0","id":1,"method":"x"}`, KindRequest, "1", "x", false},
		{"error reply with null id", `{"id":null,"error":{"code":-32700,"message":"parse error"}}`, KindReply, "", "", true},
		{"surrounding space", "  {\"method\":\"a\"}\r\n", KindNotification, "", "a", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMessage([]byte(tc.line))
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
		"data after the object":    `{"method":"a"} {}`,
		"jsonrpc not a string":     `{"jsonrpc":2,"method":"a"}`,
	}
	for name, line := range cases {
		t.Run(name, func(t *testing.T) {
			m, err := ParseMessage([]byte(line))
			if err == nil {
				t.Fatalf("parsed %q as %+v, want an error", line, m)
			}
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not match ErrProtocol", err)
			}
		})
	}
}

// FuzzParseMessage checks that no body panics the parser and that what it
// accepts is consistent: a routable kind, and an encoding that parses back
// to the same message.
func FuzzParseMessage(f *testing.F) {
	for _, s := range []string{
		`{"id":0,"result":{"userAgent":"x"}}`,
		`{"method":"item/agentMessage/delta","params":{"delta":"hi"}}`,
		`{"method":"item/fileChange/requestApproval","id":1,"params":{"itemId":"call_6"}}`,
		`{"error":{"code":-32600,"message":"Not initialized"},"id":0}`,
		`{"id":"x","result":null}`,
		`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk"}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		m, err := ParseMessage(body)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error %v does not match ErrProtocol", err)
			}
			return
		}
		switch m.Kind {
		case KindRequest:
			if m.Method == "" || m.ID == nil {
				t.Fatalf("request without method or id: %+v", m)
			}
		case KindNotification:
			if m.Method == "" || m.ID != nil {
				t.Fatalf("bad notification: %+v", m)
			}
		case KindReply:
			if (m.Result == nil) == (m.Error == nil) {
				t.Fatalf("reply needs exactly one of result and error: %+v", m)
			}
			if m.ID == nil && m.Error == nil {
				t.Fatalf("success reply without an id: %+v", m)
			}
		default:
			t.Fatalf("unknown kind %d", m.Kind)
		}
		again, err := ParseMessage(encode(t, m))
		if err != nil {
			t.Fatalf("re-encoded %q does not parse: %v", encode(t, m), err)
		}
		if again.Kind != m.Kind || again.Method != m.Method || string(again.ID) != string(m.ID) || again.Version != m.Version {
			t.Fatalf("round trip changed %+v into %+v", m, again)
		}
	})
}

func encode(t *testing.T, m Message) []byte {
	out := map[string]any{}
	if m.Version != "" {
		out["jsonrpc"] = m.Version
	}
	switch {
	case m.ID != nil:
		out["id"] = m.ID
	case m.Kind == KindReply:
		out["id"] = nil // an error about a message the peer could not read
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
