package contract

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/corral-dev/corral/internal/schema"
	"github.com/corral-dev/corral/internal/schema/schematest"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Index is the file listing the samples of a folder: their names and
// definitions.
const Index = "index.json"

// Encode is a sample's bytes as Go writes them (one line), with a newline.
func Encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Files returns the golden folder's content: each sample's file and the
// index, by file name.
func Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	samples := Samples()
	for _, s := range samples {
		b, err := Encode(s.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		files[s.Name+".json"] = b
	}
	idx, err := json.MarshalIndent(samples, "", "  ")
	if err != nil {
		return nil, err
	}
	files[Index] = append(idx, '\n')
	return files, nil
}

// goType is the Go type a definition decodes into, for those that are one
// type (the unions decode into their generic Go type).
func goType(def string) (reflect.Type, bool) {
	if _, ok := strings.CutPrefix(def, "CommandResults."); ok {
		return nil, false // a result is checked against its command's type elsewhere
	}
	types := map[string]any{
		"SessionEvent": event.Event{}, "Reply": wire.Reply{}, "ErrorReply": api.ErrorReply{}, "Spec": wire.Spec{},
		"HealthReply": api.HealthReply{}, "SessionReply": api.SessionReply{}, "SessionsReply": api.SessionsReply{},
		"WaitReply": api.WaitReply{}, "FeedItem": api.FeedItem{}, "TermFrame": api.TermFrame{},
		"WorkspaceReply": api.WorkspaceReply{}, "CommitRequest": api.CommitRequest{}, "CommitReply": api.CommitReply{}, "MergeReply": api.MergeReply{},
		"EnginesReply": api.EnginesReply{}, "CredentialsReply": api.CredentialsReply{}, "SetCredentialRequest": api.SetCredentialRequest{},
		"SignInRequest": api.SignInRequest{}, "SignInReply": api.SignInReply{}, "TicketReply": api.TicketReply{}, "LoginCodeReply": api.LoginCodeReply{},
	}
	v, ok := types[def]
	if !ok {
		return nil, false
	}
	return reflect.TypeOf(v), true
}

// CheckFolder validates every sample a folder's index lists against the
// schema, and decodes it into its Go type, refusing unknown fields: what
// one side wrote, the other reads. It returns the definitions the folder
// holds samples of.
func CheckFolder(dir string) (map[string]int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, Index))
	if err != nil {
		return nil, err
	}
	var index []Sample
	if err := json.Unmarshal(raw, &index); err != nil {
		return nil, fmt.Errorf("%s: %w", Index, err)
	}
	defs := map[string]int{}
	var errs []error
	for _, s := range index {
		b, err := os.ReadFile(filepath.Join(dir, s.Name+".json"))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := schematest.Validate(s.Def, b); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.Name, err))
			continue
		}
		// The unions decode through their own decoders, which refuse
		// what they do not know.
		switch s.Def {
		case "Command":
			if _, err := command.Decode(b); err != nil {
				errs = append(errs, fmt.Errorf("%s: Go cannot decode it as a command: %w", s.Name, err))
				continue
			}
		case "Message":
			if _, _, err := wire.Unmarshal(b); err != nil {
				errs = append(errs, fmt.Errorf("%s: Go cannot decode it as a message: %w", s.Name, err))
				continue
			}
		}
		if t, ok := goType(s.Def); ok {
			v := reflect.New(t).Interface()
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.DisallowUnknownFields()
			if err := dec.Decode(v); err != nil {
				errs = append(errs, fmt.Errorf("%s: Go cannot decode it as %s: %w", s.Name, t, err))
				continue
			}
		}
		defs[s.Def]++
	}
	return defs, errors.Join(errs...)
}

// Covered reports what a set of samples lacks: an event type, a command, a
// command's result, a route's body, an error code without a sample.
func Covered(names []string, defs map[string]int) error {
	have := map[string]bool{}
	for _, n := range names {
		have[n] = true
	}
	var errs []error
	reg := schema.Default()
	for _, e := range reg.Events {
		if !have["event."+string(e.Type)] {
			errs = append(errs, fmt.Errorf("no sample of event %s", e.Type))
		}
	}
	for _, c := range reg.Commands {
		if !have["command."+string(c.Name)] || !have["result."+string(c.Name)] {
			errs = append(errs, fmt.Errorf("no sample of command %s or of its result", c.Name))
		}
	}
	for _, code := range schema.Defs()["Code"].Enum {
		if !have["error."+code] {
			errs = append(errs, fmt.Errorf("no sample of an error %s", code))
		}
	}
	for _, rt := range reg.Routes {
		for _, def := range routeDefs(rt) {
			if defs[def] == 0 {
				errs = append(errs, fmt.Errorf("route %s %s: no sample of %s", rt.Method, rt.Path, def))
			}
		}
	}
	return errors.Join(errs...)
}

// routeDefs are the definitions a route's bodies are.
func routeDefs(rt schema.Route) []string {
	var out []string
	for _, v := range []any{rt.Body, rt.Reply} {
		if v == nil {
			continue
		}
		if t := reflect.TypeOf(v); t.Kind() == reflect.Struct && t.Name() != "" {
			out = append(out, defName(t))
		}
	}
	for _, d := range []string{rt.Stream, rt.Frames} {
		if d != "" {
			out = append(out, d)
		}
	}
	return out
}

func defName(t reflect.Type) string {
	switch t {
	case reflect.TypeOf(schema.CommandBody{}):
		return "Command"
	case reflect.TypeOf(event.Event{}):
		return "SessionEvent"
	}
	return t.Name()
}
