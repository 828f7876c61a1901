package catalog

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		engine string
		config wire.EngineConfig
		want   string // part of the error; "" for none
	}{
		{"nothing", "codex", nil, ""},
		{"every codex type", "codex", wire.EngineConfig{"auth": "login", "loginHome": "/home/me/.codex", "requestMaxRetries": 3.0,
			"streamIdleTimeoutMs": 1.0, "inputPricePerMTok": 0.5, "path": "/usr/bin/codex"}, ""},
		{"a Go int", "codex", wire.EngineConfig{"requestMaxRetries": 3}, ""},
		{"copilot boolean and enums", "copilot", wire.EngineConfig{"offline": false, "wireApi": "responses", "providerType": "azure", "logLevel": "debug"}, ""},
		{"an unknown key names the key and the engine's keys", "codex", wire.EngineConfig{"retries": 3.0}, "engineConfig.retries: the codex engine has no such setting (its settings: path, enginesDir, auth"},
		{"script has none", "script", wire.EngineConfig{"model": "x"}, "its settings: none"},
		{"not one of the values", "codex", wire.EngineConfig{"auth": "token"}, `engineConfig.auth: want one of apiKey, login; not "token"`},
		{"a number as a string", "codex", wire.EngineConfig{"requestMaxRetries": "3"}, `engineConfig.requestMaxRetries: want an integer of at least 0, not "3"`},
		{"a fraction for an integer", "codex", wire.EngineConfig{"requestMaxRetries": 2.5}, "want an integer of at least 0, not 2.5"},
		{"under the minimum", "codex", wire.EngineConfig{"streamIdleTimeoutMs": 0.0}, "want an integer of at least 1, not 0"},
		{"a negative price", "codex", wire.EngineConfig{"outputPricePerMTok": -1.0}, "want a number of at least 0, not -1"},
		{"a relative path", "codex", wire.EngineConfig{"loginHome": "home/.codex"}, `want an absolute path, not "home/.codex"`},
		{"a string for a boolean", "copilot", wire.EngineConfig{"offline": "false"}, `engineConfig.offline: want true or false, not "false"`},
		{"a plugin's settings pass", "my-plugin", wire.EngineConfig{"anything": "goes", "n": 1.0}, ""},
		{"a plugin cannot set a reserved key", "my-plugin", wire.EngineConfig{"plugin": "other"}, "engineConfig.plugin is set from the spec"},
		{"no engine takes an array", "my-plugin", wire.EngineConfig{"list": []any{"a"}}, "want a string, a number or a boolean, not an array"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.engine, tc.config)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Check = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("Check = %v, want an error with %q", err, tc.want)
			case tc.want != "" && !errors.Is(err, wire.ErrBadRequest):
				t.Fatalf("Check = %v, want bad_request", err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		engine, key, text string
		want              any
		err               string
	}{
		{"codex", "requestMaxRetries", "4", 4.0, ""},
		{"codex", "inputPricePerMTok", "0.25", 0.25, ""},
		{"codex", "auth", "login", "login", ""},
		{"copilot", "offline", "false", false, ""},
		{"my-plugin", "anything", "42", "42", ""},
		{"codex", "requestMaxRetries", "four", nil, `codex.requestMaxRetries: want an integer of at least 0, not "four"`},
		{"codex", "requestMaxRetries", "-1", nil, "codex.requestMaxRetries: want an integer of at least 0, not -1"},
		{"copilot", "offline", "nope", nil, `copilot.offline: want true or false, not "nope"`},
		{"codex", "auth", "token", nil, `want one of apiKey, login`},
		{"claude", "auth", "login", nil, "claude.auth: the claude engine has no such setting (its settings: path, enginesDir)"},
	} {
		got, err := Parse(tc.engine, tc.key, tc.text)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Parse(%s, %s, %q) = %v, %v; want error %q", tc.engine, tc.key, tc.text, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Parse(%s, %s, %q) = %#v, %v; want %#v", tc.engine, tc.key, tc.text, got, err, tc.want)
		}
	}
}

// Every engine declares well-formed settings: unique keys wire accepts,
// a type, a doc, enums only on strings, a default said.
func TestDeclarations(t *testing.T) {
	for _, e := range Engines() {
		seen := map[string]bool{}
		for _, s := range e.Settings {
			if seen[s.Key] {
				t.Errorf("%s declares %s twice", e.Name, s.Key)
			}
			seen[s.Key] = true
			if err := (wire.EngineConfig{s.Key: ""}).Check(); err != nil && s.Type == "string" {
				t.Errorf("%s.%s: %v", e.Name, s.Key, err)
			}
			if s.Type == "" || s.Doc == "" || s.Default == "" {
				t.Errorf("%s.%s: type, doc and default are required: %+v", e.Name, s.Key, s)
			}
			if len(s.Values) > 0 && s.Type != "string" {
				t.Errorf("%s.%s: values on a %s", e.Name, s.Key, s.Type)
			}
		}
		for _, item := range e.Credentials {
			if !strings.Contains(strings.Join(CredentialsFor(e.Name), ","), item) {
				t.Errorf("%s: CredentialsFor leaves out %s", e.Name, item)
			}
		}
	}
}
