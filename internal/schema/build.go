package schema

import (
	"errors"
	"reflect"
	"strings"
	"sync"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// build reflects every type of reg and composes the unions: SessionEvent
// (one member per event type), Command (one per command) and
// CommandResults (each command's result).
func build(reg *Registry) *reflector {
	r := newReflector(reg)
	enums := map[reflect.Type][]string{}
	for t, v := range reg.Enums {
		enums[t] = v
	}
	for _, e := range reg.Events {
		enums[typeOf[event.Type]()] = append(enums[typeOf[event.Type]()], string(e.Type))
	}
	for _, c := range reg.Commands {
		enums[typeOf[wire.Cmd]()] = append(enums[typeOf[wire.Cmd]()], string(c.Cmd))
	}
	r.enums = enums
	r.composite[typeOf[wire.Command]()] = "Command"
	r.composite[typeOf[event.Event]()] = "SessionEvent"
	r.name(typeOf[wire.Command](), "Command")
	r.name(typeOf[event.Event](), "SessionEvent")

	r.events(reg.Events)
	r.commands(reg.Commands)
	for _, v := range reg.Types {
		r.of(reflect.TypeOf(v))
	}
	for _, rt := range reg.Routes {
		for _, v := range []any{rt.Body, rt.Reply} {
			if v != nil {
				r.of(reflect.TypeOf(v))
			}
		}
	}
	return r
}

func typeOfValue(v any) reflect.Type { return reflect.TypeOf(v) }

// upperFirst is "turnEnded" → "TurnEnded".
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// EventDef names the definition of an event type's events.
func EventDef(t event.Type) string { return upperFirst(string(t)) + "Event" }

// CommandDef names the definition of a command.
func CommandDef(c wire.Cmd) string { return upperFirst(string(c)) + "Command" }

func (r *reflector) events(events []Event) {
	base := &Schema{Properties: &Properties{}}
	r.fields("Event", typeOf[event.Event](), base)
	var members []*Schema
	for _, e := range events {
		s := &Schema{Type: Types{"object"}, Description: e.Doc, Properties: &Properties{}}
		for _, p := range *base.Properties {
			switch p.Name {
			case "type":
				p = Property{Name: "type", Schema: &Schema{Const: string(e.Type)}}
			case "data":
				if e.Data == nil {
					continue
				}
				t := reflect.TypeOf(e.Data)
				p = Property{Name: "data", Schema: r.of(t)}
				if s.Description == "" {
					s.Description = r.comments[typeKey(t)]
				}
				s.Required = append(s.Required, "data")
			}
			*s.Properties = append(*s.Properties, p)
		}
		s.Required = append([]string{"seq", "ts", "type"}, s.Required...)
		name := EventDef(e.Type)
		r.defs[name] = s
		members = append(members, ref(name))
	}
	r.defs["SessionEvent"] = &Schema{
		Description:   "One line of a session's events.jsonl: one of the event types, told apart by type (docs/events.md). A shell ignores a type it does not know.",
		OneOf:         members,
		Discriminator: &Discriminator{PropertyName: "type"},
	}
}

func (r *reflector) commands(cmds []Command) {
	all := &Schema{Properties: &Properties{}}
	r.fields("Command", typeOf[wire.Command](), all)
	var members []*Schema
	results := &Schema{Type: Types{"object"}, Description: "The result of each command, in a successful reply's result.", Properties: &Properties{}}
	for _, c := range cmds {
		s := &Schema{Type: Types{"object"}, Description: c.Doc, Properties: &Properties{
			{Name: "cmd", Schema: &Schema{Const: string(c.Cmd)}},
		}, Required: append([]string{"cmd"}, c.Required...)}
		for _, name := range append(append([]string{}, c.Required...), c.Optional...) {
			p := all.Properties.Get(name)
			if p == nil {
				r.errs = append(r.errs, errors.New("command "+string(c.Cmd)+": wire.Command has no field "+name))
				continue
			}
			if vals := r.fieldEnums[CommandDef(c.Cmd)+"."+name]; vals != nil {
				cp := *p
				cp.Enum = vals
				p = &cp
			}
			*s.Properties = append(*s.Properties, Property{Name: name, Schema: p})
		}
		name := CommandDef(c.Cmd)
		r.defs[name] = s
		members = append(members, ref(name))
		*results.Properties = append(*results.Properties, Property{Name: string(c.Cmd), Schema: r.of(reflect.TypeOf(c.Result))})
		results.Required = append(results.Required, string(c.Cmd))
	}
	r.defs["Command"] = &Schema{
		Description:   "A control command, told apart by cmd (docs/commands.md). The same JSON goes to control.sock, the HTTP API and an inject message.",
		OneOf:         members,
		Discriminator: &Discriminator{PropertyName: "cmd"},
	}
	r.defs["CommandResults"] = results
}

// built is the default registry reflected, once.
var built = sync.OnceValue(func() *reflector { return build(Default()) })

// Err reports what the default registry cannot describe.
func Err() error { return errors.Join(built().errs...) }
