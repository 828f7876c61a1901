package command

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/corral-dev/corral/pkg/wire"
)

// Info describes one command for those that work from the list rather
// than the types: the decoder, the docs, schema generators.
type Info struct {
	Name Name
	// Request is the command's type, Result its result's.
	Request, Result reflect.Type

	// flat is "cmd", "requestId" and Request's fields: the command's
	// whole JSON object, which the decoder reads with unknown fields
	// refused.
	flat reflect.Type
}

// flatOwn is the index in flat of a command's first own field.
const flatOwn = 2

// entry describes the command of type Q.
func entry[Q Call[R], R any]() Info {
	var q Q
	rt := reflect.TypeFor[Q]()
	fields := []reflect.StructField{
		{Name: "Cmd", Type: reflect.TypeFor[Name](), Tag: `json:"cmd"`},
		{Name: "RequestID", Type: reflect.TypeFor[string](), Tag: `json:"requestId,omitempty"`},
	}
	for i := range rt.NumField() {
		f := rt.Field(i)
		if !f.IsExported() || f.Anonymous {
			panic(fmt.Sprintf("command %s: field %s: commands have exported, named fields only", q.Cmd(), f.Name))
		}
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
	}
	return Info{Name: q.Cmd(), Request: rt, Result: reflect.TypeFor[R](), flat: reflect.StructOf(fields)}
}

// Lookup returns the command named name.
func Lookup(name Name) (Info, bool) {
	for _, c := range Registry {
		if c.Name == name {
			return c, true
		}
	}
	return Info{}, false
}

// names lists every command's name, for error messages.
func names() string {
	var b strings.Builder
	for i, c := range Registry {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(c.Name))
	}
	return b.String()
}

// Decode reads a command from its JSON object. A malformed object, a
// missing or unknown "cmd", a field the command does not have or a field
// of the wrong type is a *wire.Error with code bad_request that says which.
// A requestId is checked and dropped: DecodeWithID keeps it.
func Decode(raw []byte) (Request, error) {
	req, _, err := DecodeWithID(raw)
	return req, err
}

// DecodeWithID is Decode that also returns the command's requestId ("" when
// it has none).
func DecodeWithID(raw []byte) (Request, string, error) {
	var head struct {
		Cmd Name `json:"cmd"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, "", badCommand("", err)
	}
	if head.Cmd == "" {
		return nil, "", wire.Errorf(wire.CodeBadRequest, "cmd is required: one of %s", names())
	}
	info, ok := Lookup(head.Cmd)
	if !ok {
		return nil, "", wire.Errorf(wire.CodeBadRequest, "unknown command %q (the commands are %s)", head.Cmd, names())
	}
	flat := reflect.New(info.flat)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(flat.Interface()); err != nil {
		return nil, "", badCommand(head.Cmd, err)
	}
	req := reflect.New(info.Request).Elem()
	for i := range req.NumField() {
		req.Field(i).Set(flat.Elem().Field(i + flatOwn))
	}
	out := req.Interface().(Request)
	if err := CheckLimits(out); err != nil {
		return nil, "", err
	}
	requestID := flat.Elem().Field(1).String()
	if err := checkRequestID(requestID); err != nil {
		return nil, "", err
	}
	return out, requestID, nil
}

// badCommand explains why a command's JSON was refused.
func badCommand(cmd Name, err error) error {
	prefix := "malformed command"
	if cmd != "" {
		prefix = string(cmd)
	}
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &typ) && typ.Field != "":
		return wire.Errorf(wire.CodeBadRequest, "%s: field %q must be %s, not %s", prefix, typ.Field, jsonKind(typ.Type), typ.Value)
	case errors.As(err, &typ):
		return wire.Errorf(wire.CodeBadRequest, "%s: a command is a JSON object, not %s", prefix, typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return wire.Errorf(wire.CodeBadRequest, "%s: %s", prefix, strings.TrimPrefix(err.Error(), "json: "))
	default:
		return wire.Errorf(wire.CodeBadRequest, "%s: %v", prefix, err)
	}
}

// MarshalWithID is Marshal with the command's requestId ("" for none)
// after "cmd": {"cmd":"send","requestId":"r1","text":"hi"}.
func MarshalWithID(req Request, requestID string) ([]byte, error) {
	out, err := Marshal(req)
	if err != nil || requestID == "" {
		return out, err
	}
	if err := checkRequestID(requestID); err != nil {
		return nil, err
	}
	id, err := json.Marshal(requestID)
	if err != nil {
		return nil, err
	}
	// out is {"cmd":"NAME"...; the id goes right after the name.
	name, _ := json.Marshal(req.Cmd())
	at := len(`{"cmd":`) + len(name)
	with := make([]byte, 0, len(out)+len(`,"requestId":`)+len(id))
	with = append(with, out[:at]...)
	with = append(with, `,"requestId":`...)
	with = append(with, id...)
	return append(with, out[at:]...), nil
}

// Marshal encodes a command as its JSON object, "cmd" first:
// {"cmd":"send","text":"hi"}.
func Marshal(req Request) ([]byte, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encode command %s: %w", req.Cmd(), err)
	}
	if len(body) < 2 || body[0] != '{' {
		return nil, fmt.Errorf("encode command %s: a command's fields make a JSON object, not %s", req.Cmd(), body)
	}
	name, err := json.Marshal(req.Cmd())
	if err != nil {
		return nil, fmt.Errorf("encode command %s: %w", req.Cmd(), err)
	}
	out := make([]byte, 0, len(`{"cmd":,`)+len(name)+len(body))
	out = append(out, `{"cmd":`...)
	out = append(out, name...)
	if len(body) > 2 {
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	return out, nil
}

// Result decodes the result of command req from the reply that answered it:
// the command's error when it was refused.
func Result[R any](req Call[R], reply *wire.Reply) (R, error) {
	var r R
	if err := reply.Err(); err != nil {
		return r, err
	}
	if len(reply.Result) > 0 {
		if err := json.Unmarshal(reply.Result, &r); err != nil {
			return r, wire.Errorf(wire.CodeProtocol, "the result of %s: %v", req.Cmd(), err)
		}
	}
	return r, nil
}

// jsonKind names what JSON value a Go type takes.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
		reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	default:
		return "an object"
	}
}
