package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// reflector turns Go types into JSON Schema definitions the way
// encoding/json encodes them: json tags name the properties, a field
// without omitempty is required, and one that may encode as null (a
// pointer, slice, map or raw message) says so.
type reflector struct {
	defs  map[string]*Schema
	names map[reflect.Type]string // every struct and enum reflected, by its definition's name
	types map[string]reflect.Type // the other way round
	// enums are the values of named string types (docs name them).
	enums map[reflect.Type][]string
	// fieldEnums are the values of plain string fields, by "Type.json".
	fieldEnums map[string][]string
	// wireForm maps a type with its own MarshalJSON to the type of what
	// it writes.
	wireForm map[reflect.Type]reflect.Type
	// composite maps a type to a definition built by hand (a union), not
	// reflected: wire.Command to Command, event.Event to SessionEvent.
	composite map[reflect.Type]string
	rawTypes  map[string]reflect.Type
	rawRefs   map[string]string
	neverNull map[string]bool
	// rename gives the definition name of a type whose Go name is not the
	// one the contract publishes.
	rename   map[reflect.Type]string
	comments map[string]string
	errs     []error
}

func newReflector(reg *Registry) *reflector {
	return &reflector{
		defs:       map[string]*Schema{},
		names:      map[reflect.Type]string{},
		types:      map[string]reflect.Type{},
		enums:      reg.Enums,
		fieldEnums: reg.FieldEnums,
		rawTypes:   reg.RawTypes,
		rawRefs:    reg.RawRefs,
		neverNull:  reg.NeverNull,
		wireForm:   reg.WireForms,
		rename:     reg.Names,
		composite:  map[reflect.Type]string{},
		comments:   Comments,
	}
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawType     = reflect.TypeFor[json.RawMessage]()
	bytesType   = reflect.TypeFor[[]byte]()
	marshalType = reflect.TypeFor[json.Marshaler]()
	textType    = reflect.TypeFor[encoding.TextMarshaler]()
)

// typeKey is how comments name a type.
func typeKey(t reflect.Type) string { return t.PkgPath() + "." + t.Name() }

// of returns the schema of a value of type t: a reference for a struct or
// an enum, which it defines on first sight.
func (r *reflector) of(t reflect.Type) *Schema {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if name, ok := r.composite[t]; ok {
		return ref(name)
	}
	if form, ok := r.wireForm[t]; ok {
		return r.define(t, form)
	}
	if vals, ok := r.enums[t]; ok {
		if _, done := r.names[t]; !done {
			r.name(t, r.defName(t))
			r.defs[r.defName(t)] = &Schema{Type: Types{"string"}, Enum: vals, Description: r.comments[typeKey(t)]}
		}
		return ref(r.names[t])
	}
	switch t {
	case timeType:
		return &Schema{Type: Types{"string"}, Format: "date-time"}
	case rawType:
		return &Schema{}
	case bytesType:
		return &Schema{Type: Types{"string"}, ContentEncoding: "base64"}
	}
	if t.Kind() != reflect.Struct && (t.Implements(marshalType) || t.Implements(textType) || reflect.PointerTo(t).Implements(textType)) {
		r.errs = append(r.errs, fmt.Errorf("%s encodes itself: give the schema its values (Registry.Enums) or its wire form (Registry.WireForms)", t))
		return &Schema{}
	}
	switch t.Kind() {
	case reflect.String:
		return &Schema{Type: Types{"string"}}
	case reflect.Bool:
		return &Schema{Type: Types{"boolean"}}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return &Schema{Type: Types{"integer"}}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		zero := 0.0
		s := &Schema{Type: Types{"integer"}, Minimum: &zero}
		if t.Bits() < 64 {
			top := float64(uint64(1)<<t.Bits() - 1)
			s.Maximum = &top
		}
		return s
	case reflect.Float32, reflect.Float64:
		return &Schema{Type: Types{"number"}}
	case reflect.Slice, reflect.Array:
		return &Schema{Type: Types{"array"}, Items: r.of(t.Elem())}
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			r.errs = append(r.errs, fmt.Errorf("%s: only maps with string keys become JSON objects", t))
		}
		return &Schema{Type: Types{"object"}, Additional: r.of(t.Elem())}
	case reflect.Struct:
		if t.Implements(marshalType) {
			r.errs = append(r.errs, fmt.Errorf("%s encodes itself: give the schema its wire form (Registry.WireForms)", t))
		}
		if t.Name() == "" { // an anonymous struct: inline, not a definition
			s := &Schema{Type: Types{"object"}, Properties: &Properties{}}
			r.fields("", t, s)
			return s
		}
		return r.define(t, t)
	case reflect.Interface:
		return &Schema{}
	}
	r.errs = append(r.errs, fmt.Errorf("%s: no JSON form", t))
	return &Schema{}
}

// name records t's definition name, refusing a name two types would share.
func (r *reflector) name(t reflect.Type, name string) {
	if other, ok := r.types[name]; ok && other != t {
		r.errs = append(r.errs, fmt.Errorf("%s and %s would both be defined as %q: rename one in the registry", other, t, name))
	}
	r.names[t], r.types[name] = name, t
}

// define defines struct t, whose JSON is that of form, and returns a
// reference to it.
func (r *reflector) define(t, form reflect.Type) *Schema {
	if name, ok := r.names[t]; ok {
		return ref(name)
	}
	name := r.defName(t)
	r.name(t, name)
	s := &Schema{Type: Types{"object"}, Description: r.comments[typeKey(t)], Properties: &Properties{}}
	r.defs[name] = s // before the fields: a type may refer to itself
	r.fields(name, form, s)
	return ref(name)
}

// defName is t's definition name: its Go name, unless the registry gives
// it another (Registry.Names).
func (r *reflector) defName(t reflect.Type) string {
	if name, ok := r.rename[t]; ok {
		return name
	}
	return t.Name()
}

// fields adds the properties of struct t to s, flattening embedded structs
// as encoding/json does.
func (r *reflector) fields(owner string, t reflect.Type, s *Schema) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				r.fields(owner, ft, s)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		key := owner + "." + name
		var p *Schema
		rawRef, isRawRef := r.rawRefs[key]
		switch {
		case r.rawTypes[key] != nil:
			p = r.of(r.rawTypes[key])
		case isRawRef:
			p = &Schema{}
			if rawRef != "" {
				p = ref(rawRef)
			}
			if f.Type.Kind() == reflect.Slice && f.Type.Elem() == rawType {
				p = &Schema{Type: Types{"array"}, Items: p}
			}
		case r.fieldEnums[key] != nil:
			p = &Schema{Type: Types{"string"}, Enum: r.fieldEnums[key]}
		default:
			p = r.of(f.Type)
		}
		optional := strings.Contains(","+opts+",", ",omitempty,") || strings.Contains(","+opts+",", ",omitzero,")
		if !optional {
			s.Required = append(s.Required, name)
			switch f.Type.Kind() {
			case reflect.Pointer, reflect.Slice, reflect.Map:
				if f.Type != bytesType && !r.neverNull[key] {
					p = &Schema{AnyOf: []*Schema{p, {Type: Types{"null"}}}}
				}
			}
		}
		if desc := r.comments[typeKey(t)+"."+f.Name]; desc != "" {
			// (2020-12 reads the keywords beside a $ref, description
			// among them.)
			cp := *p
			cp.Description = desc
			p = &cp
		}
		*s.Properties = append(*s.Properties, Property{Name: name, Schema: p})
	}
}
