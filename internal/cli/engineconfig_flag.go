package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/pkg/wire"
)

// engineDefaults is serve's --engine-config ENGINE.KEY=VALUE, repeatable:
// the settings every new session on ENGINE gets under its own
// engineConfig. VALUE is read as the setting's type says (a number, true
// or false, or text).
type engineDefaults map[string]wire.EngineConfig

func (d engineDefaults) String() string {
	var parts []string
	for engine, c := range d {
		for _, k := range c.Keys() {
			parts = append(parts, engine+"."+k+"="+wire.ConfigString(c[k]))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (d engineDefaults) Set(v string) error {
	path, text, ok := strings.Cut(v, "=")
	engine, key, dotted := strings.Cut(path, ".")
	if !ok || !dotted || engine == "" || key == "" {
		return fmt.Errorf("%q: want ENGINE.KEY=VALUE (codex.requestMaxRetries=4)", v)
	}
	val, err := catalog.Parse(engine, key, text)
	if err != nil {
		return err
	}
	c := d[engine]
	if c == nil {
		c = wire.EngineConfig{}
		d[engine] = c
	}
	c[key] = val
	return catalog.Check(engine, c)
}

// sessionSettings reads new's --engine-config KEY=VALUE flags as the
// engine's settings say (the supervisor checks them again).
func sessionSettings(engine string, flags []string) (wire.EngineConfig, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	c := wire.EngineConfig{}
	for _, f := range flags {
		key, text, ok := strings.Cut(f, "=")
		if !ok || key == "" {
			return nil, usagef("--engine-config %q: want KEY=VALUE", f)
		}
		v, err := catalog.Parse(engine, key, text)
		if err != nil {
			return nil, usagef("--engine-config %v", err)
		}
		c[key] = v
	}
	return c, nil
}
