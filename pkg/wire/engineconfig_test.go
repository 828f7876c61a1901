package wire

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestEngineConfigCheckAndStrings(t *testing.T) {
	c := EngineConfig{"n": 4.0, "f": 0.25, "b": false, "s": "login", "i": 3}
	if err := c.Check(); err != nil {
		t.Fatal(err)
	}
	got := c.Strings()
	for k, want := range map[string]string{"n": "4", "f": "0.25", "b": "false", "s": "login", "i": "3"} {
		if got[k] != want {
			t.Errorf("Strings()[%s] = %q, want %q", k, got[k], want)
		}
	}
	many := EngineConfig{}
	for i := 0; i <= MaxConfigKeys; i++ {
		many[strings.Repeat("k", i%60+1)+string(rune('a'+i%26))+string(rune('a'+i/26))] = "x"
	}
	for name, bad := range map[string]EngineConfig{
		"too many keys": many,
		"an empty key":  {"": "x"},
		"a long key":    {strings.Repeat("k", MaxConfigKey+1): "x"},
		"a slash":       {"a/b": "x"},
		"reserved":      {"pluginPath": "/x"},
		"null":          {"a": nil},
		"an object":     {"a": map[string]any{}},
		"a long value":  {"a": strings.Repeat("v", MaxConfigValue+1)},
		"invalid UTF-8": {"a": "\xff"},
	} {
		if err := bad.Check(); !errors.Is(err, ErrBadRequest) {
			t.Errorf("%s: Check = %v, want bad_request", name, err)
		}
	}
	if merged := (EngineConfig{"a": "1"}).Merged(EngineConfig{"a": "0", "b": "2"}); merged["a"] != "1" || merged["b"] != "2" {
		t.Fatalf("Merged = %v", merged)
	}
}

// FuzzEngineConfig: whatever a spec's engineConfig decodes to, Check
// decides without panicking, and what it accepts converts to strings that
// hold every key.
func FuzzEngineConfig(f *testing.F) {
	for _, seed := range []string{`{"auth":"login","requestMaxRetries":4}`, `{"a":1e400}`, `{"a":[1]}`, `{"plugin":"x"}`, `{"a":null,"b":true}`, `{}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var spec Spec
		if err := json.Unmarshal(append(append([]byte(`{"engine":"x","engineConfig":`), raw...), '}'), &spec); err != nil {
			return
		}
		if err := spec.EngineConfig.Check(); err != nil {
			if !errors.Is(err, ErrBadRequest) {
				t.Fatalf("Check = %v, want bad_request", err)
			}
			return
		}
		if s := spec.EngineConfig.Strings(); len(s) != len(spec.EngineConfig) {
			t.Fatalf("Strings lost keys: %v from %v", s, spec.EngineConfig)
		}
	})
}
