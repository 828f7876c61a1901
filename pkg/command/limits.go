package command

import "github.com/corral-dev/corral/pkg/wire"

// CheckLimits refuses a command with a field over its limit (wire's input
// limits: MaxMessageBytes, MaxGoalBytes, MaxNoteBytes, MaxNameBytes),
// naming the field. Decode calls it, so every transport refuses such a
// command where it enters; the runner calls it too, for commands built in
// Go.
func CheckLimits(req Request) error {
	type field struct {
		name  string
		value string
		limit int
	}
	var fields []field
	switch c := req.(type) {
	case Send:
		fields = []field{{"text", c.Text, wire.MaxMessageBytes}}
	case Steer:
		fields = []field{{"text", c.Text, wire.MaxMessageBytes}}
	case SetGoal:
		fields = []field{{"goal", c.Goal, wire.MaxGoalBytes}}
	case Answer:
		fields = []field{{"askId", c.AskID, wire.MaxNameBytes}, {"decision", c.Decision, wire.MaxNameBytes}, {"note", c.Note, wire.MaxNoteBytes}}
	case DecideHunk:
		fields = []field{{"editId", c.EditID, wire.MaxNameBytes}, {"hunkId", c.HunkID, wire.MaxNameBytes},
			{"decision", c.Decision, wire.MaxNameBytes}, {"note", c.Note, wire.MaxNoteBytes}}
	case SetMode:
		fields = []field{{"mode", c.Mode, wire.MaxNameBytes}}
	case CancelQueued:
		fields = []field{{"messageId", c.MessageID, wire.MaxNameBytes}}
	}
	for _, f := range fields {
		if len(f.value) > f.limit {
			return wire.TooLong(f.name, len(f.value), f.limit)
		}
	}
	return nil
}
