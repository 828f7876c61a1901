package command

import (
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

func TestCommandLimits(t *testing.T) {
	big := func(n int) string { return strings.Repeat("<", n) }
	tests := []struct {
		name  string
		cmd   Request
		field string // "" when within the limits
	}{
		{"a message at the limit", Send{Text: big(wire.MaxMessageBytes)}, ""},
		{"a message over it", Send{Text: big(wire.MaxMessageBytes + 1)}, "text"},
		{"a steer over it", Steer{Text: big(wire.MaxMessageBytes + 1)}, "text"},
		{"a goal at the limit", SetGoal{Goal: big(wire.MaxGoalBytes)}, ""},
		{"a goal of 1 MiB", SetGoal{Goal: big(1 << 20)}, "goal"},
		{"a note over it", Answer{AskID: "a1", Decision: "allow", Note: big(wire.MaxNoteBytes + 1)}, "note"},
		{"an ask id over it", Answer{AskID: big(wire.MaxNameBytes + 1)}, "askId"},
		{"a hunk id over it", DecideHunk{HunkID: big(wire.MaxNameBytes + 1)}, "hunkId"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, err := range []error{CheckLimits(tc.cmd), decoded(t, tc.cmd)} {
				if tc.field == "" {
					if err != nil {
						t.Fatal(err)
					}
					continue
				}
				if !errors.Is(err, wire.ErrBadRequest) || !strings.HasPrefix(err.Error(), tc.field+" is ") {
					t.Fatalf("error %v, want bad_request naming %s", err, tc.field)
				}
			}
		})
	}
}

// decoded is the error Decode gives for cmd's JSON.
func decoded(t *testing.T, cmd Request) error {
	t.Helper()
	raw, err := Marshal(cmd)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Decode(raw)
	return err
}
