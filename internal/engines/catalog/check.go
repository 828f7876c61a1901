package catalog

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// Check checks a session's engineConfig for engine: what any engine's
// settings must be (wire.EngineConfig.Check), and, for a built-in engine,
// that each key is one it declares and each value of the declared type.
// A plugin engine declares nothing here: its settings pass as they are.
// Errors are bad_request and name the key.
func Check(engine string, c wire.EngineConfig) error {
	if err := c.Check(); err != nil {
		return err
	}
	e, ok := Lookup(engine)
	if !ok {
		return nil
	}
	for _, key := range c.Keys() {
		s, ok := e.Setting(key)
		if !ok {
			return wire.Errorf(wire.CodeBadRequest, "engineConfig.%s: the %s engine has no such setting (its settings: %s)", key, engine, keyList(e))
		}
		if err := checkValue(s, c[key]); err != nil {
			return wire.Errorf(wire.CodeBadRequest, "engineConfig.%s: %v", key, err)
		}
	}
	return nil
}

func keyList(e Engine) string {
	if len(e.Settings) == 0 {
		return "none"
	}
	return strings.Join(e.Keys(), ", ")
}

// settingError is a value that does not fit its setting.
type settingError string

func (e settingError) Error() string { return string(e) }

func checkValue(s api.EngineSetting, v any) error {
	switch s.Type {
	case api.SettingString:
		str, ok := v.(string)
		if !ok {
			return settingError("want " + describe(s) + ", not " + kind(v))
		}
		if len(s.Values) > 0 && !slices.Contains(s.Values, str) {
			return settingError("want one of " + strings.Join(s.Values, ", ") + "; not " + strconv.Quote(str))
		}
		if s.Path && !filepath.IsAbs(str) {
			return settingError("want an absolute path, not " + strconv.Quote(str))
		}
	case api.SettingBoolean:
		if _, ok := v.(bool); !ok {
			return settingError("want true or false, not " + kind(v))
		}
	case api.SettingInteger, api.SettingNumber:
		n, ok := number(v)
		if !ok {
			return settingError("want " + describe(s) + ", not " + kind(v))
		}
		if s.Type == api.SettingInteger && (n != math.Trunc(n) || math.Abs(n) > 1<<53) {
			return settingError("want " + describe(s) + ", not " + strconv.FormatFloat(n, 'f', -1, 64))
		}
		if s.Min != nil && n < *s.Min {
			return settingError("want " + describe(s) + ", not " + strconv.FormatFloat(n, 'f', -1, 64))
		}
	}
	return nil
}

func number(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int:
		return float64(v), true
	}
	return 0, false
}

// describe says what a setting takes, for messages.
func describe(s api.EngineSetting) string {
	var d string
	switch s.Type {
	case api.SettingString:
		d = "a string"
		if s.Path {
			d = "an absolute path"
		}
	case api.SettingInteger:
		d = "an integer"
	case api.SettingNumber:
		d = "a number"
	case api.SettingBoolean:
		d = "true or false"
	}
	if s.Min != nil {
		d += " of at least " + strconv.FormatFloat(*s.Min, 'f', -1, 64)
	}
	return d
}

func kind(v any) string {
	switch v := v.(type) {
	case string:
		return strconv.Quote(v)
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case int:
		return strconv.Itoa(v)
	case nil:
		return "null"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// Parse reads a setting's value from text (the command line, a settings
// file's string): a number or a boolean for a setting of that type, the
// text itself otherwise, and for a plugin engine's unknown key.
func Parse(engine, key, text string) (any, error) {
	e, ok := Lookup(engine)
	if !ok {
		return text, nil
	}
	s, ok := e.Setting(key)
	if !ok {
		return nil, wire.Errorf(wire.CodeBadRequest, "%s.%s: the %s engine has no such setting (its settings: %s)", engine, key, engine, keyList(e))
	}
	var v any = text
	switch s.Type {
	case api.SettingBoolean:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "%s.%s: want true or false, not %q", engine, key, text)
		}
		v = b
	case api.SettingInteger, api.SettingNumber:
		n, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, wire.Errorf(wire.CodeBadRequest, "%s.%s: want %s, not %q", engine, key, describe(s), text)
		}
		v = n
	}
	if err := checkValue(s, v); err != nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "%s.%s: %v", engine, key, err)
	}
	return v, nil
}
