package hunks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Snapshot is one version of a file: its bytes, or its absence. The zero
// Snapshot is an absent file.
type Snapshot struct {
	Exists bool
	Data   []byte
}

// Present returns the Snapshot of an existing file holding data.
func Present(data []byte) Snapshot {
	return Snapshot{Exists: true, Data: data}
}

// Kind says what an edit does to the file as a whole.
type Kind string

const (
	KindModify Kind = "modify" // the file exists before and after
	KindCreate Kind = "create" // the file does not exist before
	KindDelete Kind = "delete" // the file does not exist after
)

// Op says what a line of a hunk does.
type Op byte

const (
	OpContext Op = ' ' // unchanged, shown for context
	OpDelete  Op = '-' // present only in the old version
	OpAdd     Op = '+' // present only in the new version
)

// MarshalText encodes an Op as "context", "delete" or "add".
func (op Op) MarshalText() ([]byte, error) {
	switch op {
	case OpContext:
		return []byte("context"), nil
	case OpDelete:
		return []byte("delete"), nil
	case OpAdd:
		return []byte("add"), nil
	}
	return nil, fmt.Errorf("invalid line op %q", byte(op))
}

// UnmarshalText decodes the names written by MarshalText.
func (op *Op) UnmarshalText(text []byte) error {
	switch string(text) {
	case "context":
		*op = OpContext
	case "delete":
		*op = OpDelete
	case "add":
		*op = OpAdd
	default:
		return fmt.Errorf("invalid line op %q", text)
	}
	return nil
}

// Line is one line of a hunk. Text+EOL are the line's exact bytes.
type Line struct {
	Op Op
	// Text is the line without its terminator. It may hold invalid UTF-8;
	// JSON then carries the exact bytes in textBase64 as well.
	Text string
	// EOL is "\n", "\r\n", or "" for a last line without a newline.
	EOL string
}

// lineJSON is Line's wire form. Text is always valid UTF-8 so a viewer can
// show it; TextBase64 is set only when Text had to be altered for that.
type lineJSON struct {
	Op         Op     `json:"op"`
	Text       string `json:"text"`
	TextBase64 []byte `json:"textBase64,omitempty"`
	EOL        string `json:"eol"`
}

// LineJSON is the JSON form of a Line, what its MarshalJSON writes: the
// name a schema of the contract describes it by.
type LineJSON = lineJSON

// MarshalJSON writes {"op","text","eol"} and, for invalid UTF-8,
// "textBase64" with the exact bytes.
func (l Line) MarshalJSON() ([]byte, error) {
	w := lineJSON{Op: l.Op, Text: l.Text, EOL: l.EOL}
	if !utf8.ValidString(l.Text) {
		w.TextBase64 = []byte(l.Text)
		w.Text = strings.ToValidUTF8(l.Text, "\uFFFD")
	}
	// Leave HTML escaping to the encoder that embeds this, so that one
	// set to keep "<" and "&" as they are does so for line text too.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// UnmarshalJSON reads what MarshalJSON writes, preferring textBase64.
func (l *Line) UnmarshalJSON(data []byte) error {
	var w lineJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*l = Line{Op: w.Op, Text: w.Text, EOL: w.EOL}
	if w.TextBase64 != nil {
		l.Text = string(w.TextBase64)
	}
	return nil
}

// Hunk is one reviewable change: a run of changed lines with up to three
// lines of context on each side. Line numbers are 1-based and follow git:
// a zero-length range names the line before it (0 at the top of the file).
type Hunk struct {
	ID       string `json:"id"`     // "h1", "h2", … in file order
	Header   string `json:"header"` // "@@ -a,b +c,d @@", or a binary summary
	OldStart int    `json:"oldStart"`
	OldLines int    `json:"oldLines"`
	NewStart int    `json:"newStart"`
	NewLines int    `json:"newLines"`
	Added    int    `json:"added"`
	Removed  int    `json:"removed"`
	Lines    []Line `json:"lines"`
}

// Edit is a proposed change to one file, split into hunks. Its methods
// only read it, so one Edit may serve several goroutines.
type Edit struct {
	Path    string `json:"path"`
	Kind    Kind   `json:"kind"`
	Binary  bool   `json:"binary"`
	Added   int    `json:"added"`   // lines added by all hunks; 0 when binary
	Removed int    `json:"removed"` // lines removed by all hunks; 0 when binary
	OldSize int    `json:"oldSize"` // bytes
	NewSize int    `json:"newSize"` // bytes
	// OldBlob and NewBlob are the git blob ids (SHA-1) of the two
	// versions, empty for an absent one. Apply uses OldBlob (Revert
	// NewBlob) to recognise an undrifted file.
	OldBlob string `json:"oldBlob,omitempty"`
	NewBlob string `json:"newBlob,omitempty"`
	Hunks   []Hunk `json:"hunks"`

	// contents holds a binary edit's two versions. It is not serialised,
	// so a binary Edit decoded from JSON can be shown but not applied.
	contents *binaryContents
}

// binaryContents are the versions of a binary file; nil for an absent one.
type binaryContents struct {
	old, new []byte
}

// ErrUnknownHunk is returned, wrapped, for a hunk id the edit lacks.
var ErrUnknownHunk = errors.New("unknown hunk")

// ErrInvalidEdit is returned, wrapped, when an Edit's fields contradict each
// other, which only happens to one built or decoded outside this package.
var ErrInvalidEdit = errors.New("invalid edit")

// IDs returns the ids of all hunks in file order.
func (e *Edit) IDs() []string {
	ids := make([]string, len(e.Hunks))
	for i, h := range e.Hunks {
		ids[i] = h.ID
	}
	return ids
}

// Hunk returns the hunk with the given id.
func (e *Edit) Hunk(id string) (*Hunk, bool) {
	for i := range e.Hunks {
		if e.Hunks[i].ID == id {
			return &e.Hunks[i], true
		}
	}
	return nil, false
}

// pick resolves ids to hunk indexes in file order, dropping duplicates and
// checking each chosen hunk.
func (e *Edit) pick(ids []string) ([]int, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	index := make(map[string]int, len(e.Hunks))
	for i, h := range e.Hunks {
		if _, dup := index[h.ID]; dup {
			return nil, fmt.Errorf("%s: %w: duplicate hunk id %q", e.Path, ErrInvalidEdit, h.ID)
		}
		index[h.ID] = i
	}
	chosen := make([]bool, len(e.Hunks))
	for _, id := range ids {
		i, ok := index[id]
		if !ok {
			return nil, fmt.Errorf("%s: %w %q", e.Path, ErrUnknownHunk, id)
		}
		chosen[i] = true
	}
	var picked []int
	for i, c := range chosen {
		if c {
			picked = append(picked, i)
		}
	}
	for _, i := range picked {
		if err := e.checkHunk(&e.Hunks[i]); err != nil {
			return nil, err
		}
	}
	return picked, nil
}

// Validate reports whether the edit is internally consistent: unique ids,
// line counts that match the lines, well-formed line endings, and a
// single whole-file hunk for created, deleted and binary files.
func (e *Edit) Validate() error {
	if _, err := e.pick(e.IDs()); err != nil {
		return err
	}
	return nil
}

func (e *Edit) checkHunk(h *Hunk) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%s: %w: hunk %s: %s", e.Path, ErrInvalidEdit, h.ID, fmt.Sprintf(format, args...))
	}
	switch e.Kind {
	case KindModify, KindCreate, KindDelete:
	default:
		return bad("unknown kind %q", e.Kind)
	}
	if (e.Binary || e.Kind != KindModify) && len(e.Hunks) != 1 {
		return bad("a binary, created or deleted file has one hunk, not %d", len(e.Hunks))
	}
	if e.Binary {
		if len(h.Lines) != 0 {
			return bad("a binary hunk has no lines")
		}
		return nil
	}
	var old, new, added, removed int
	oldEnded, newEnded := false, false
	for _, l := range h.Lines {
		if strings.IndexByte(l.Text, '\n') >= 0 {
			return bad("line text holds a newline")
		}
		if l.EOL != "\n" && l.EOL != "\r\n" && l.EOL != "" {
			return bad("line ending %q", l.EOL)
		}
		inOld, inNew := l.Op != OpAdd, l.Op != OpDelete
		switch l.Op {
		case OpContext:
		case OpDelete:
			removed++
		case OpAdd:
			added++
		default:
			return bad("line op %q", byte(l.Op))
		}
		if (inOld && oldEnded) || (inNew && newEnded) {
			return bad("a line follows the last line of the file")
		}
		if inOld {
			old++
			oldEnded = l.EOL == ""
		}
		if inNew {
			new++
			newEnded = l.EOL == ""
		}
	}
	if old != h.OldLines || new != h.NewLines {
		return bad("header counts -%d +%d but lines count -%d +%d", h.OldLines, h.NewLines, old, new)
	}
	if added != h.Added || removed != h.Removed {
		return bad("counts +%d -%d but lines count +%d -%d", h.Added, h.Removed, added, removed)
	}
	if h.OldStart < 0 || h.NewStart < 0 || (h.OldStart == 0 && h.OldLines != 0) || (h.NewStart == 0 && h.NewLines != 0) {
		return bad("line numbers -%d,%d +%d,%d", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
	}
	// A created or deleted file's hunk is all additions or all deletions,
	// starting at the top; that is what anchors it to the whole file.
	switch {
	case e.Kind == KindCreate && (old != 0 || h.OldStart != 0 || h.NewStart > 1):
		return bad("a created file's hunk has old lines")
	case e.Kind == KindDelete && (new != 0 || h.NewStart != 0 || h.OldStart > 1):
		return bad("a deleted file's hunk has new lines")
	}
	return nil
}
