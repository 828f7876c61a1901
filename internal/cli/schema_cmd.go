package cli

import (
	"context"
	"encoding/json"
	"io"
	"slices"

	"github.com/corral-dev/corral/internal/schema"
)

func runSchema(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "schema", "", "Print the contract of the supervisor's API, generated from its Go types: "+
		"the JSON Schema (2020-12) of every shape, the OpenAPI 3.1 document of the HTTP API, or the TypeScript types.")
	format := fs.String("format", string(schema.FormatJSONSchema), "jsonschema, openapi or typescript")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	if !slices.Contains(schema.Formats(), schema.Format(*format)) {
		return usagef("--format %q: want jsonschema, openapi or typescript", *format)
	}
	b, err := schema.Render(schema.Format(*format))
	if err != nil {
		return err
	}
	// In an envelope, a JSON document is the result as it is; the
	// TypeScript declarations are a string.
	var result any = string(b)
	if schema.Format(*format) != schema.FormatTypeScript {
		result = json.RawMessage(b)
	}
	return e.emit(result, func(w io.Writer) error { _, err := w.Write(b); return err })
}
