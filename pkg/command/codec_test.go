package command

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestEveryCommandRoundTrips(t *testing.T) {
	capUSD := 2.5
	examples := []Request{
		Send{Text: "add a README"},
		Steer{Text: "use tabs \"please\""},
		Stop{},
		Answer{AskID: "a3", Decision: DecisionAllow, Note: "read-only"},
		DecideHunk{EditID: "e1", HunkID: "h2", Decision: DecisionReject},
		GetStatus{},
		SetMode{Mode: "auto"},
		SetGoal{Goal: "tests pass; lint is clean"},
		GetGoal{},
		ClearGoal{},
		MarkGoalDone{},
		SetSpendCap{SpendCapUSD: &capUSD},
		CancelQueued{MessageID: "m4"},
		ForkSession{},
		Rename{Title: "Fix the flaky test"},
	}
	seen := map[Name]bool{}
	for _, req := range examples {
		raw, err := Marshal(req)
		if err != nil {
			t.Fatalf("marshal %s: %v", req.Cmd(), err)
		}
		if !strings.HasPrefix(string(raw), `{"cmd":"`+string(req.Cmd())+`"`) {
			t.Errorf("%s encodes as %s: cmd must come first", req.Cmd(), raw)
		}
		got, err := Decode(raw)
		if err != nil {
			t.Fatalf("decode %s: %v", raw, err)
		}
		if !reflect.DeepEqual(got, req) {
			t.Errorf("%s round-trips to %#v, want %#v", raw, got, req)
		}
		seen[req.Cmd()] = true
	}
	for _, c := range Registry {
		if !seen[c.Name] {
			t.Errorf("command %s has no example here", c.Name)
		}
	}
}

func TestRegistry(t *testing.T) {
	names := map[Name]bool{}
	for _, c := range Registry {
		if names[c.Name] {
			t.Errorf("%s is registered twice", c.Name)
		}
		names[c.Name] = true
		if c.Request.Kind() != reflect.Struct || c.Result == nil {
			t.Errorf("%s: request %v, result %v", c.Name, c.Request, c.Result)
		}
		if got := reflect.Zero(c.Request).Interface().(Request).Cmd(); got != c.Name {
			t.Errorf("%s's type says it is %s", c.Name, got)
		}
	}
	if info, ok := Lookup("stop"); !ok || info.Result != reflect.TypeFor[event.StoppedData]() {
		t.Errorf("Lookup(stop) = %+v, %v", info, ok)
	}
}

func TestDecodeRefusesClearly(t *testing.T) {
	tests := []struct{ name, raw, says string }{
		{"not JSON", `{"cmd":`, "malformed command"},
		{"an array", `[1]`, "a JSON object"},
		{"no cmd", `{"text":"hi"}`, "cmd is required"},
		{"cmd not a string", `{"cmd":3}`, `field "cmd" must be a string`},
		{"unknown command", `{"cmd":"frobnicate"}`, `unknown command "frobnicate"`},
		{"a typo", `{"cmd":"send","txt":"hi"}`, `send: unknown field "txt"`},
		{"another command's field", `{"cmd":"send","text":"hi","askId":"a1"}`, `unknown field "askId"`},
		{"wrong type", `{"cmd":"setSpendCap","spendCapUsd":"lots"}`, `field "spendCapUsd" must be a number, not string`},
		{"trailing data", `{"cmd":"stop"} {}`, "after top-level value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := Decode([]byte(tc.raw))
			if !errors.Is(err, wire.ErrBadRequest) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Decode(%s) = %#v, %v; want bad_request saying %q", tc.raw, req, err, tc.says)
			}
		})
	}
}

func TestResultIsTyped(t *testing.T) {
	got, err := Result(Send{Text: "x"}, &wire.Reply{OK: true, Result: []byte(`{"id":"m1","text":"x"}`)})
	if err != nil || got != (event.Queued{ID: "m1", Text: "x"}) {
		t.Fatalf("Result = %+v, %v", got, err)
	}
	if _, err := Result(Stop{}, wire.ErrReply(wire.Errorf(wire.CodeConflict, "busy"))); !errors.Is(err, wire.ErrConflict) {
		t.Fatalf("a refused command: %v", err)
	}
	if _, err := Result(GetGoal{}, &wire.Reply{OK: true, Result: []byte(`[]`)}); !errors.Is(err, wire.ErrProtocol) {
		t.Fatalf("a result of the wrong shape: %v", err)
	}
}

// FuzzDecode checks the decoder never panics, and that what it takes
// encodes to an object it takes again as the same command.
func FuzzDecode(f *testing.F) {
	for _, seed := range []string{
		`{"cmd":"send","text":"hi"}`,
		`{"cmd":"answer","askId":"a1","decision":"allow","note":"ok"}`,
		`{"cmd":"setSpendCap","spendCapUsd":1e3}`,
		`{"cmd":"decideHunk","hunkId":"e1/h2","decision":"accept"}`,
		`{"cmd":"stop","Cmd":"send"}`,
		`{"CMD":"status"}`,
		`{"cmd":"send","text":"\u2028","TEXT":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		req, err := Decode(raw)
		if err != nil {
			if !errors.Is(err, wire.ErrBadRequest) {
				t.Fatalf("Decode(%q): %v is not bad_request", raw, err)
			}
			return
		}
		again, err := Marshal(req)
		if err != nil {
			t.Fatalf("Marshal(%#v): %v", req, err)
		}
		back, err := Decode(again)
		if err != nil || !reflect.DeepEqual(back, req) {
			t.Fatalf("%q decoded as %#v, which encodes as %s and decodes as %#v, %v", raw, req, again, back, err)
		}
	})
}
