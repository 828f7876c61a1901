package schema

import (
	"bytes"
	"encoding/json"
)

// Draft is the JSON Schema dialect of every document here.
const Draft = "https://json-schema.org/draft/2020-12/schema"

// Schema is a JSON Schema (2020-12), with the keywords the reflector uses.
type Schema struct {
	Schema          string             `json:"$schema,omitempty"`
	ID              string             `json:"$id,omitempty"`
	Title           string             `json:"title,omitempty"`
	Ref             string             `json:"$ref,omitempty"`
	Description     string             `json:"description,omitempty"`
	Type            Types              `json:"type,omitempty"`
	Format          string             `json:"format,omitempty"`
	ContentEncoding string             `json:"contentEncoding,omitempty"`
	Const           any                `json:"const,omitempty"`
	Enum            []string           `json:"enum,omitempty"`
	Minimum         *float64           `json:"minimum,omitempty"`
	Maximum         *float64           `json:"maximum,omitempty"`
	Properties      *Properties        `json:"properties,omitempty"`
	Required        []string           `json:"required,omitempty"`
	Additional      *Schema            `json:"additionalProperties,omitempty"`
	Closed          bool               `json:"-"` // additionalProperties: false
	Items           *Schema            `json:"items,omitempty"`
	OneOf           []*Schema          `json:"oneOf,omitempty"`
	AnyOf           []*Schema          `json:"anyOf,omitempty"`
	Defs            map[string]*Schema `json:"$defs,omitempty"`
	// Discriminator names the property whose const tells a oneOf's
	// members apart (OpenAPI's keyword; JSON Schema ignores it).
	Discriminator *Discriminator `json:"discriminator,omitempty"`
}

// Discriminator is OpenAPI's discriminator object.
type Discriminator struct {
	PropertyName string `json:"propertyName"`
}

// MarshalJSON writes additionalProperties: false for a closed object.
func (s *Schema) MarshalJSON() ([]byte, error) {
	type plain Schema
	raw, err := json.Marshal((*plain)(s))
	if err != nil || !s.Closed {
		return raw, err
	}
	return append(bytes.TrimSuffix(raw, []byte("}")), []byte(`,"additionalProperties":false}`)...), nil
}

// Types is a schema's type: one name, or several (["array","null"]).
type Types []string

// MarshalJSON writes a single type as a string.
func (t Types) MarshalJSON() ([]byte, error) {
	if len(t) == 1 {
		return json.Marshal(t[0])
	}
	return json.Marshal([]string(t))
}

// Property is one property of an object schema.
type Property struct {
	Name   string
	Schema *Schema
}

// Properties keeps an object's properties in the order of the Go struct's
// fields, so the documents read like the code.
type Properties []Property

// MarshalJSON writes the properties as an object, in order.
func (p Properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, prop := range p {
		if i > 0 {
			b.WriteByte(',')
		}
		name, _ := json.Marshal(prop.Name)
		b.Write(name)
		b.WriteByte(':')
		raw, err := json.Marshal(prop.Schema)
		if err != nil {
			return nil, err
		}
		b.Write(raw)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// Get returns the named property's schema, or nil.
func (p *Properties) Get(name string) *Schema {
	if p == nil {
		return nil
	}
	for _, prop := range *p {
		if prop.Name == name {
			return prop.Schema
		}
	}
	return nil
}

// ref returns a reference to the definition name.
func ref(name string) *Schema { return &Schema{Ref: "#/$defs/" + name} }

// RefName returns the definition a reference names, or "".
func RefName(s *Schema) string {
	const prefix = "#/$defs/"
	if s == nil || len(s.Ref) <= len(prefix) || s.Ref[:len(prefix)] != prefix {
		return ""
	}
	return s.Ref[len(prefix):]
}
