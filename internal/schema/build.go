package schema

import (
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// build reflects every type of reg and composes the unions: SessionEvent
// (one member per event type), Command (one per command), CommandResults
// (each command's result) and Message (one per message of the supervisor
// <-> runner protocol).
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
		enums[typeOf[command.Name]()] = append(enums[typeOf[command.Name]()], string(c.Name))
	}
	r.enums = enums
	r.composite[typeOf[event.Event]()] = "SessionEvent"
	r.name(typeOf[event.Event](), "SessionEvent")
	r.composite[typeOf[CommandBody]()] = "Command"
	r.name(typeOf[CommandBody](), "Command")

	r.engineConfigs()
	r.events(reg.Events)
	r.commands(reg.Commands)
	r.messages(reg.Messages)
	// The unions name commands and message types by constants, not by a
	// field of their type: define the two enums all the same.
	r.of(typeOf[command.Name]())
	r.of(typeOf[wire.Type]())
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

// CommandBody stands for a control command where a route takes one: the
// Command union of every command of command.Registry.
type CommandBody struct{}

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
func CommandDef(c command.Name) string { return upperFirst(string(c)) + "Command" }

// MessageDef names the definition of a message of the supervisor <->
// runner protocol, after its Go type: wire.TermOpen is TermOpenMessage.
func MessageDef(m wire.Message) string {
	return reflect.Indirect(reflect.ValueOf(m)).Type().Name() + "Message"
}

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
	r.union("SessionEvent", "type", "One line of a session's events.jsonl: one of the event types, told apart by type (docs/events.md). A shell ignores a type it does not know.", members)
}

func (r *reflector) commands(cmds []command.Info) {
	var members []*Schema
	results := &Schema{Type: Types{"object"}, Description: "The result of each command, in a successful reply's result.", Properties: &Properties{}}
	for _, c := range cmds {
		name := CommandDef(c.Name)
		s := &Schema{Type: Types{"object"}, Description: r.comments[typeKey(c.Request)], Properties: &Properties{
			{Name: "cmd", Schema: &Schema{Const: string(c.Name)}},
			{Name: "requestId", Schema: &Schema{Type: Types{"string"},
				Description: "The client's name for this attempt at the command: a retry with the same requestId gets the first reply that succeeded instead of acting twice (docs/commands.md, Retries); at most 128 bytes, no control characters."}},
		}, Required: []string{"cmd"}}
		r.fields(name, c.Request, s)
		r.defs[name] = s
		members = append(members, ref(name))
		*results.Properties = append(*results.Properties, Property{Name: string(c.Name), Schema: r.of(c.Result)})
		results.Required = append(results.Required, string(c.Name))
	}
	r.union("Command", "cmd", "A control command, told apart by cmd (docs/commands.md). The same JSON goes to control.sock, the HTTP API and the runner's command message.", members)
	r.defs["CommandResults"] = results
}

// messages composes the union of the protocol's messages: each is its Go
// type's fields after "t" (and "reqId" for a request and its reply), the
// envelope the codec writes around them.
func (r *reflector) messages(msgs map[wire.Type]wire.Message) {
	types := slices.Sorted(maps.Keys(msgs))
	var members []*Schema
	for _, t := range types {
		m := msgs[t]
		name := MessageDef(m)
		s := &Schema{Type: Types{"object"}, Description: r.comments[typeKey(reflect.Indirect(reflect.ValueOf(m)).Type())], Properties: &Properties{
			{Name: "t", Schema: &Schema{Const: string(t)}},
		}, Required: []string{"t"}}
		if wire.CarriesReqID(t) {
			*s.Properties = append(*s.Properties, Property{Name: "reqId", Schema: &Schema{Type: Types{"string"}}})
			s.Required = append(s.Required, "reqId")
		}
		r.fields(name, reflect.Indirect(reflect.ValueOf(m)).Type(), s)
		r.defs[name] = s
		members = append(members, ref(name))
	}
	r.union("Message", "t", "One line of the supervisor <-> runner protocol, told apart by t (docs/wire.md).", members)
}

// union defines name as one of members, told apart by the field
// discriminator.
func (r *reflector) union(name, discriminator, description string, members []*Schema) {
	r.defs[name] = &Schema{Description: description, OneOf: members, Discriminator: &Discriminator{PropertyName: discriminator}}
}

// built is the default registry reflected, once.
var built = sync.OnceValue(func() *reflector { return build(Default()) })

// Err reports what the default registry cannot describe.
func Err() error { return errors.Join(built().errs...) }
