package wire

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf8"
)

// EngineConfig is a session's engine settings (Spec.EngineConfig): each key
// one of the engine's settings, each value a string, a number or a boolean
// as the setting's type says. GET /v1/engines lists every built-in
// engine's keys and types; the supervisor checks a spec against them, and
// Check holds what any engine's settings must be.
type EngineConfig map[string]any

// Bounds of an EngineConfig.
const (
	MaxConfigKeys  = 64
	MaxConfigKey   = 64
	MaxConfigValue = 4096
)

// ReservedConfigKeys are derived from the spec by the runner (the plugin's
// name and path), so a spec cannot set them.
var ReservedConfigKeys = []string{"plugin", "pluginPath"}

// Check refuses settings no engine could take: too many, a key that is not
// a plain name, a reserved key, a value that is not a string, a finite
// number or a boolean, or a string too long or not UTF-8. Errors are
// bad_request and name the key.
func (c EngineConfig) Check() error {
	if len(c) > MaxConfigKeys {
		return Errorf(CodeBadRequest, "engineConfig has %d keys; at most %d are accepted", len(c), MaxConfigKeys)
	}
	for _, key := range c.Keys() {
		if !configKey(key) {
			return Errorf(CodeBadRequest, "engineConfig key %q: want 1 to %d letters, digits, '.', '_' or '-'", key, MaxConfigKey)
		}
		for _, r := range ReservedConfigKeys {
			if key == r {
				return Errorf(CodeBadRequest, "engineConfig.%s is set from the spec (pluginPath, or the engine's name), not in engineConfig", key)
			}
		}
		switch v := c[key].(type) {
		case string:
			if len(v) > MaxConfigValue || !utf8.ValidString(v) {
				return Errorf(CodeBadRequest, "engineConfig.%s: want UTF-8 text of at most %d bytes", key, MaxConfigValue)
			}
		case bool:
		case float64:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return Errorf(CodeBadRequest, "engineConfig.%s: want a finite number", key)
			}
		case int:
		default:
			return Errorf(CodeBadRequest, "engineConfig.%s: want a string, a number or a boolean, not %s", key, jsonKind(v))
		}
	}
	return nil
}

// Keys returns the keys, sorted.
func (c EngineConfig) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Strings is the settings as an engine takes them
// (engine.StartOptions.Config): numbers in their shortest form ("3",
// "0.25"), booleans as "true" and "false". Call it on settings that passed
// Check.
func (c EngineConfig) Strings() map[string]string {
	out := make(map[string]string, len(c))
	for k, v := range c {
		out[k] = ConfigString(v)
	}
	return out
}

// ConfigString is one setting's value as an engine takes it.
func ConfigString(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	}
	return fmt.Sprint(v)
}

// Merged returns base's settings with c's over them.
func (c EngineConfig) Merged(base EngineConfig) EngineConfig {
	if len(base) == 0 {
		return c
	}
	out := make(EngineConfig, len(base)+len(c))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range c {
		out[k] = v
	}
	return out
}

func configKey(k string) bool {
	if k == "" || len(k) > MaxConfigKey {
		return false
	}
	for _, r := range k {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

// jsonKind names what a decoded JSON value is.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
