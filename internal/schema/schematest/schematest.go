// Package schematest validates JSON against the contract's JSON Schema
// (internal/schema), for tests: what one side writes must be what the
// schema says the other side reads.
package schematest

import (
	"bytes"
	"fmt"
	"strings"
	"sync"

	"github.com/corral-dev/corral/internal/schema"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var compiler = sync.OnceValues(func() (*jsonschema.Compiler, error) {
	raw, err := schema.Render(schema.FormatJSONSchema)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.AssertContent()
	if err := c.AddResource(schema.ID, doc); err != nil {
		return nil, err
	}
	return c, nil
})

var (
	mu       sync.Mutex
	compiled = map[string]*jsonschema.Schema{}
)

// Compile compiles definition def of the schema; "Def.prop" names the
// schema of one of Def's properties (CommandResults.send: send's result).
func Compile(def string) (*jsonschema.Schema, error) {
	mu.Lock()
	defer mu.Unlock()
	if s, ok := compiled[def]; ok {
		return s, nil
	}
	c, err := compiler()
	if err != nil {
		return nil, err
	}
	ptr := "#/$defs/" + def
	if name, prop, ok := strings.Cut(def, "."); ok {
		ptr = "#/$defs/" + name + "/properties/" + prop
	}
	s, err := c.Compile(schema.ID + ptr)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", def, err)
	}
	compiled[def] = s
	return s, nil
}

// Validate checks that raw, one JSON value, is a valid def.
func Validate(def string, raw []byte) error {
	s, err := Compile(def)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s: not JSON: %w", def, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s: %w", def, err)
	}
	return nil
}
