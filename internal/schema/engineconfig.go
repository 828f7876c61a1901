package schema

import (
	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/pkg/wire"
)

// engineConfigs defines EngineConfig (the spec's engineConfig: any
// engine's settings) and, from the catalog, each built-in engine's
// settings with their types: ClaudeConfig, CodexConfig, ...
func (r *reflector) engineConfigs() {
	r.composite[typeOf[wire.EngineConfig]()] = "EngineConfig"
	r.name(typeOf[wire.EngineConfig](), "EngineConfig")
	r.defs["EngineConfig"] = &Schema{
		Type:        Types{"object"},
		Description: r.comments[typeKey(typeOf[wire.EngineConfig]())],
		Additional:  &Schema{Type: Types{"string", "number", "boolean"}},
	}
	for _, e := range catalog.Engines() {
		if len(e.Settings) == 0 {
			continue
		}
		s := &Schema{Type: Types{"object"}, Closed: true, Properties: &Properties{},
			Description: "The settings of the " + e.Name + " engine (" + e.Doc + "): a spec's engineConfig when its engine is " + e.Name + "."}
		for _, set := range e.Settings {
			p := &Schema{Type: Types{string(set.Type)}, Enum: set.Values, Minimum: set.Min, Description: set.Doc + " Default: " + set.Default + "."}
			if set.Path {
				p.Description = "An absolute path: " + p.Description
			}
			*s.Properties = append(*s.Properties, Property{Name: set.Key, Schema: p})
		}
		r.defs[EngineConfigDef(e.Name)] = s
	}
}

// EngineConfigDef names the definition of an engine's settings.
func EngineConfigDef(engine string) string { return upperFirst(engine) + "Config" }
