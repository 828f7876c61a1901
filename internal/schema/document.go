package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/corral-dev/corral/pkg/wire"
)

// ID is the JSON Schema document's $id.
const ID = "urn:corral:schema:v1"

// Defs returns every definition of the default registry, by name.
func Defs() map[string]*Schema { return built().defs }

// JSONSchema returns the JSON Schema document: every definition under
// $defs. Refer to one as ID + "#/$defs/Name".
func JSONSchema() *Schema {
	return &Schema{
		Schema: Draft,
		ID:     ID,
		Title:  "Corral",
		Description: "Every shape that crosses a process boundary in Corral: the HTTP API's bodies, " +
			"the session spec, control commands and their results, session events and their data, " +
			"errors, and the supervisor-runner messages. Generated from the Go types.",
		Defs: built().defs,
	}
}

// Format names a generated artefact.
type Format string

// Formats of the artefacts.
const (
	FormatJSONSchema Format = "jsonschema"
	FormatOpenAPI    Format = "openapi"
	FormatTypeScript Format = "typescript"
)

// Formats lists every Format.
func Formats() []Format { return []Format{FormatJSONSchema, FormatOpenAPI, FormatTypeScript} }

// Artefact is where a generated file is checked in.
type Artefact struct {
	Format Format
	Path   string // relative to the module's root
}

// Artefacts are the generated files in the repository.
var Artefacts = []Artefact{
	{FormatJSONSchema, "api/schema.json"},
	{FormatOpenAPI, "api/openapi.json"},
	{FormatTypeScript, "clients/typescript/src/types.gen.ts"},
}

var rendered sync.Map // Format → []byte

// Render returns an artefact's bytes.
func Render(f Format) ([]byte, error) {
	if err := Err(); err != nil {
		return nil, err
	}
	if b, ok := rendered.Load(f); ok {
		return b.([]byte), nil
	}
	var b []byte
	var err error
	switch f {
	case FormatJSONSchema:
		b, err = indent(JSONSchema())
	case FormatOpenAPI:
		b, err = indent(OpenAPI())
	case FormatTypeScript:
		b = TypeScript()
	default:
		return nil, fmt.Errorf("schema: no format %q (want jsonschema, openapi or typescript)", f)
	}
	if err != nil {
		return nil, err
	}
	rendered.Store(f, b)
	return b, nil
}

func indent(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API.
func OpenAPI() map[string]any {
	schemas := map[string]*Schema{}
	for name, s := range built().defs {
		schemas[name] = rebase(s)
	}
	paths := map[string]map[string]any{}
	for _, rt := range Default().Routes {
		if paths[rt.Path] == nil {
			paths[rt.Path] = map[string]any{}
		}
		paths[rt.Path][strings.ToLower(rt.Method)] = operation(rt)
	}
	return map[string]any{
		"openapi":           "3.1.0",
		"jsonSchemaDialect": Draft,
		"info": map[string]any{
			"title":   "Corral supervisor API",
			"version": fmt.Sprintf("v1 (runner protocol %d)", wire.ProtocolVersion),
			"description": "The HTTP API of a Corral supervisor (docs/api.md). Over the unix socket in its state folder no token is needed; " +
				"over TCP every request carries Authorization: Bearer <token>. Every failure is a Reply with ok false and an Error.",
		},
		"servers": []map[string]any{{"url": "/", "description": "the supervisor's socket or TCP address"}},
		"components": map[string]any{
			"schemas": schemas,
			"securitySchemes": map[string]any{
				"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "over TCP only; the socket needs none"},
			},
		},
		"security": []map[string]any{{}, {"bearer": []string{}}},
		"paths":    paths,
	}
}

// operation is a route's OpenAPI operation.
func operation(rt Route) map[string]any {
	op := map[string]any{
		"summary":     rt.Summary,
		"operationId": operationID(rt),
	}
	var params []map[string]any
	for _, seg := range strings.Split(rt.Path, "/") {
		if strings.HasPrefix(seg, "{") {
			name := strings.Trim(seg, "{}")
			params = append(params, map[string]any{"name": name, "in": "path", "required": true, "schema": str})
		}
	}
	for _, p := range rt.Params {
		s := rebase(p.Schema)
		if p.Repeated {
			s = &Schema{Type: Types{"array"}, Items: s}
		}
		params = append(params, map[string]any{"name": p.Name, "in": p.In, "description": p.Doc, "schema": s})
	}
	if params != nil {
		op["parameters"] = params
	}
	if rt.Body != nil {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{
			"application/json": map[string]any{"schema": rebase(built().of(typeOfValue(rt.Body)))},
		}}
	}
	status := rt.Status
	if status == 0 {
		status = 200
	}
	responses := map[string]any{
		"default": map[string]any{"description": "a failure: ok false and the error (its code says which)",
			"content": map[string]any{"application/json": map[string]any{"schema": rebase(ref("ErrorReply"))}}},
	}
	switch {
	case rt.Stream != "":
		item := rebase(ref(rt.Stream))
		responses["200"] = map[string]any{
			"description": "a stream of " + rt.Stream + ": each SSE message's data, and each NDJSON line, is one",
			"content": map[string]any{
				"text/event-stream":    map[string]any{"schema": item},
				"application/x-ndjson": map[string]any{"schema": item},
			},
		}
	case rt.Frames != "":
		responses["101"] = map[string]any{
			"description":     "a WebSocket: binary frames carry the terminal's bytes, text frames are " + rt.Frames,
			"x-corral-frames": rebase(ref(rt.Frames)),
		}
	default:
		responses[fmt.Sprint(status)] = map[string]any{"description": "success",
			"content": map[string]any{"application/json": map[string]any{"schema": rebase(built().of(typeOfValue(rt.Reply)))}}}
	}
	op["responses"] = responses
	return op
}

// operationID is "getSessionsIdEvents" for GET /v1/sessions/{id}/events.
func operationID(rt Route) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(rt.Method))
	for _, seg := range strings.Split(strings.TrimPrefix(rt.Path, "/v1/"), "/") {
		seg = strings.Trim(seg, "{}")
		seg = strings.NewReplacer(".", "", "-", "").Replace(seg)
		b.WriteString(upperFirst(seg))
	}
	return b.String()
}

// rebase copies s with its references pointing into OpenAPI's components.
func rebase(s *Schema) *Schema {
	if s == nil {
		return nil
	}
	c := *s
	if name := RefName(s); name != "" {
		c.Ref = "#/components/schemas/" + name
	}
	if s.Properties != nil {
		ps := make(Properties, len(*s.Properties))
		for i, p := range *s.Properties {
			ps[i] = Property{Name: p.Name, Schema: rebase(p.Schema)}
		}
		c.Properties = &ps
	}
	c.Items = rebase(s.Items)
	c.Additional = rebase(s.Additional)
	c.OneOf = rebaseAll(s.OneOf)
	c.AnyOf = rebaseAll(s.AnyOf)
	return &c
}

func rebaseAll(list []*Schema) []*Schema {
	if list == nil {
		return nil
	}
	out := make([]*Schema, len(list))
	for i, s := range list {
		out[i] = rebase(s)
	}
	return out
}

// sortedDefs lists the definitions' names in order.
func sortedDefs() []string {
	names := make([]string, 0, len(built().defs))
	for n := range built().defs {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
