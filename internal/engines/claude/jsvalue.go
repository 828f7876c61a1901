package claude

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// jsonValue is a JSON value as JavaScript holds it after JSON.parse: objects
// keep their key order, numbers are doubles. It exists so a notebook can be
// rewritten byte for byte the way Claude's JSON.stringify writes it.
type jsonValue struct {
	kind jsonKind
	obj  *orderedObject
	arr  []*jsonValue
	str  string
	num  float64
	b    bool
}

type jsonKind uint8

const (
	kindNull jsonKind = iota
	kindBool
	kindNumber
	kindString
	kindArray
	kindObject
)

// orderedObject keeps keys in insertion order; a repeated key keeps its
// first position and its last value, as JSON.parse does.
type orderedObject struct {
	keys []string
	vals map[string]*jsonValue
}

func (o *orderedObject) get(k string) *jsonValue {
	if o.vals == nil {
		return nil
	}
	return o.vals[k]
}

func (o *orderedObject) set(k string, v *jsonValue) {
	if o.vals == nil {
		o.vals = map[string]*jsonValue{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// maxJSONDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxJSONDepth = 512

func parseOrdered(data []byte) (*jsonValue, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

func parseValue(dec *json.Decoder, depth int) (*jsonValue, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &jsonValue{kind: kindNull}, nil
	case bool:
		return &jsonValue{kind: kindBool, b: t}, nil
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return nil, err
		}
		return &jsonValue{kind: kindNumber, num: f}, nil
	case string:
		return &jsonValue{kind: kindString, str: t}, nil
	case json.Delim:
		switch t {
		case '[':
			v := &jsonValue{kind: kindArray}
			for dec.More() {
				e, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.arr = append(v.arr, e)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		case '{':
			v := &jsonValue{kind: kindObject, obj: &orderedObject{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				e, err := parseValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				v.obj.set(k, e)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return v, nil
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// stringify writes v as JSON.stringify(v, null, 1) does, indent being the
// current line's indentation.
func (v *jsonValue) stringify(b *strings.Builder, indent string) {
	switch v.kind {
	case kindNull:
		b.WriteString("null")
	case kindBool:
		b.WriteString(strconv.FormatBool(v.b))
	case kindNumber:
		b.WriteString(jsNumber(v.num))
	case kindString:
		writeJSString(b, v.str)
	case kindArray:
		if len(v.arr) == 0 {
			b.WriteString("[]")
			return
		}
		inner := indent + " "
		b.WriteString("[\n")
		for i, e := range v.arr {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(inner)
			e.stringify(b, inner)
		}
		b.WriteString("\n" + indent + "]")
	case kindObject:
		keys := v.obj.orderedKeys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return
		}
		inner := indent + " "
		b.WriteString("{\n")
		for i, k := range keys {
			if i > 0 {
				b.WriteString(",\n")
			}
			b.WriteString(inner)
			writeJSString(b, k)
			b.WriteString(": ")
			v.obj.vals[k].stringify(b, inner)
		}
		b.WriteString("\n" + indent + "}")
	}
}

// orderedKeys is JavaScript's property order: integer-like keys ascending,
// then the others in insertion order.
func (o *orderedObject) orderedKeys() []string {
	var ints, rest []string
	for _, k := range o.keys {
		if isArrayIndex(k) {
			ints = append(ints, k)
		} else {
			rest = append(rest, k)
		}
	}
	sort.Slice(ints, func(i, j int) bool {
		a, _ := strconv.ParseUint(ints[i], 10, 64)
		b, _ := strconv.ParseUint(ints[j], 10, 64)
		return a < b
	})
	return append(ints, rest...)
}

func isArrayIndex(k string) bool {
	if k == "" || len(k) > 10 || (len(k) > 1 && k[0] == '0') {
		return false
	}
	n, err := strconv.ParseUint(k, 10, 64)
	return err == nil && n < math.MaxUint32
}

// jsNumber formats a double as JavaScript's Number.prototype.toString.
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "null" // JSON.stringify writes non-finite numbers as null
	case f == 0:
		return "0"
	}
	sign := ""
	if f < 0 {
		sign = "-"
		f = -f
	}
	// Shortest round-tripping digits and the decimal exponent n, with the
	// value being 0.digits × 10^n.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	n := x + 1
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		return sign + digits + strings.Repeat("0", n-k)
	case 0 < n && n <= 21:
		return sign + digits[:n] + "." + digits[n:]
	case -6 < n && n <= 0:
		return sign + "0." + strings.Repeat("0", -n) + digits
	}
	es := "+"
	if n-1 < 0 {
		es = "-"
	}
	m := digits[:1]
	if k > 1 {
		m += "." + digits[1:]
	}
	return sign + m + "e" + es + strconv.Itoa(abs(n-1))
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// writeJSString quotes s as JSON.stringify does: only quotes, backslashes
// and control characters are escaped.
func writeJSString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 {
				b.WriteString(`\u` + hex4(uint16(r), false))
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
