package wire

import "fmt"

// Input limits: text a person or a shell puts into a session, refused with
// bad_request where it enters (the HTTP API, control.sock, the wire), so
// that every event repeating it stays far below MaxEventLine even with
// every byte escaped (JSON writes '<' as six bytes).
const (
	// MaxMessageBytes bounds the text of send and steer, and a loop's
	// prompt.
	MaxMessageBytes = 256 << 10
	// MaxGoalBytes bounds a goal, which every goal check repeats.
	MaxGoalBytes = 16 << 10
	// MaxNoteBytes bounds a note on an answer or a hunk decision.
	MaxNoteBytes = 16 << 10
	// MaxNameBytes bounds the ids and words of a command (askId, editId,
	// hunkId, messageId, decision, mode).
	MaxNameBytes = 256
	// MaxEventLine bounds one encoded event line. An event that would be
	// longer is stored with its data replaced by TruncatedData, so it
	// keeps its seq and type and no stream ever skips it.
	MaxEventLine = 4 << 20
)

// TruncatedData is the data of an event whose encoding passed
// MaxEventLine: how long the data was and how it began.
type TruncatedData struct {
	Truncated bool `json:"truncated"`
	// Bytes is the length of the original data's JSON.
	Bytes int `json:"bytes"`
	// Head is the start of the original data's JSON (at most
	// TruncatedHead bytes, cut at a character boundary).
	Head string `json:"head"`
}

// TruncatedHead is how much of a truncated event's data is kept.
const TruncatedHead = 64 << 10

// TooLong is the bad_request for a field over its limit.
func TooLong(field string, n, limit int) error {
	return Errorf(CodeBadRequest, "%s is %d bytes; the limit is %d", field, n, limit)
}

// CheckLimits refuses a spec whose goal or loop prompt is over its limit,
// or whose goalLimit or compactAt is out of range, naming the field.
func (s Spec) CheckLimits() error {
	switch {
	case s.Goal != nil && len(s.Goal.Text) > MaxGoalBytes:
		return TooLong("goal.text", len(s.Goal.Text), MaxGoalBytes)
	case s.Loop != nil && len(s.Loop.Prompt) > MaxMessageBytes:
		return TooLong("loop.prompt", len(s.Loop.Prompt), MaxMessageBytes)
	case s.GoalLimit < 0 || s.GoalLimit > 1000:
		return Errorf(CodeBadRequest, "goalLimit %d: want 1 to 1000 goal checks in a row (0 or absent: 20)", s.GoalLimit)
	case s.CompactAt < 0 || s.CompactAt > 100 || (s.CompactAt > 0 && s.CompactAt < 10):
		return Errorf(CodeBadRequest, "compactAt %s: want a context fill from 10 to 100 percent (0 or absent: 95)", fmt.Sprint(s.CompactAt))
	}
	return nil
}
