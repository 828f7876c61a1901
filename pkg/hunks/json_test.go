package hunks_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/hunks"
)

func TestEditJSONShape(t *testing.T) {
	e := mustDiff(t, text("a\r\nb\n"), text("a\r\nc"))
	got, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"path":"f","kind":"modify","binary":false,"added":1,"removed":1,"oldSize":5,"newSize":4,` +
		`"oldBlob":"` + e.OldBlob + `","newBlob":"` + e.NewBlob + `","hunks":[` +
		`{"id":"h1","header":"@@ -1,2 +1,2 @@","oldStart":1,"oldLines":2,"newStart":1,"newLines":2,"added":1,"removed":1,"lines":[` +
		`{"op":"context","text":"a","eol":"\r\n"},` +
		`{"op":"delete","text":"b","eol":"\n"},` +
		`{"op":"add","text":"c","eol":""}]}]}`
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestEditJSONWithoutChanges(t *testing.T) {
	got, err := json.Marshal(mustDiff(t, text("same"), text("same")))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), `"hunks":[]`) {
		t.Errorf("an edit without hunks should list none, not null: %s", got)
	}
}

// Invalid UTF-8 is shown with replacement characters and carried exactly
// in textBase64, so a decoded edit still applies byte for byte.
func TestEditJSONRoundTripsInvalidUTF8(t *testing.T) {
	old := "un caf\xe9 au lait, s'il vous pla\xeet\nmerci\n"
	new := "un caf\xe9 cr\xe8me, s'il vous pla\xeet\nmerci\n"
	e := mustDiff(t, text(old), text(new))
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\"text\":\"un caf\ufffd cr\ufffdme, s'il vous pla\ufffdt\",\"textBase64\":\"dW4gY2Fm6SBjcuhtZSwgcydpbCB2b3VzIHBsYe50\"") {
		t.Errorf("JSON lacks the display text and exact bytes: %s", data)
	}
	var decoded hunks.Edit
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	got, err := decoded.Apply(text(old), decoded.IDs())
	if err != nil || string(got.Data) != new {
		t.Errorf("Apply after decoding = %s, %v; want %q", show(got), err, new)
	}
	p1, _ := e.Patch()
	p2, _ := decoded.Patch()
	if string(p1) != string(p2) {
		t.Errorf("patch changed across JSON:\n%s\n%s", p1, p2)
	}
}

func TestBinaryEditJSON(t *testing.T) {
	e := mustDiff(t, text("\x00old"), text("\x00newer"))
	data, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"path":"f","kind":"modify","binary":true,"added":0,"removed":0,"oldSize":4,"newSize":6,` +
		`"oldBlob":"` + e.OldBlob + `","newBlob":"` + e.NewBlob + `","hunks":[` +
		`{"id":"h1","header":"binary 4 → 6 bytes","oldStart":0,"oldLines":0,"newStart":0,"newLines":0,"added":0,"removed":0,"lines":[]}]}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	var decoded hunks.Edit
	if err := json.Unmarshal(data, &decoded); err != nil {
		t.Fatal(err)
	}
	// The contents stay with the Edit that Diff returned.
	if _, err := decoded.Apply(text("\x00old"), []string{"h1"}); err == nil || errors.Is(err, hunks.ErrConflict) {
		t.Errorf("Apply of a decoded binary edit: %v, want a plain error", err)
	}
	if _, err := decoded.Patch(); err == nil {
		t.Error("Patch of a decoded binary edit succeeded")
	}
}

// Edits decoded from tampered JSON are refused with ErrInvalidEdit.
func TestInvalidEditsAreRefused(t *testing.T) {
	base := mustDiff(t, text("a\nb\nc\n"), text("a\nB\nc\n"))
	data, err := json.Marshal(base)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		from string
		to   string
	}{
		{"count off", `"oldLines":3`, `"oldLines":4`},
		{"added off", `"added":1,"removed":1,"lines"`, `"added":2,"removed":1,"lines"`},
		{"newline in text", `"text":"B"`, `"text":"B\nX"`},
		{"bad line ending", `"text":"B","eol":"\n"`, `"text":"B","eol":"\r"`},
		{"line after the last", `"text":"a","eol":"\n"`, `"text":"a","eol":""`},
		{"duplicate id", `"hunks":[{"id":"h1"`, `"hunks":[{"id":"h1","header":"","oldStart":9,"oldLines":0,"newStart":9,"newLines":0,"added":0,"removed":0,"lines":[]},{"id":"h1"`},
		{"unknown kind", `"kind":"modify"`, `"kind":"rename"`},
		{"negative start", `"oldStart":1`, `"oldStart":-1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tampered := strings.Replace(string(data), tt.from, tt.to, 1)
			if tampered == string(data) {
				t.Fatalf("%q not found in %s", tt.from, data)
			}
			var e hunks.Edit
			if err := json.Unmarshal([]byte(tampered), &e); err != nil {
				t.Fatal(err)
			}
			if err := e.Validate(); !errors.Is(err, hunks.ErrInvalidEdit) {
				t.Errorf("Validate: %v, want ErrInvalidEdit", err)
			}
			if _, err := e.Apply(text("a\nb\nc\n"), []string{"h1"}); !errors.Is(err, hunks.ErrInvalidEdit) {
				t.Errorf("Apply: %v, want ErrInvalidEdit", err)
			}
		})
	}
}

func TestLineOpJSON(t *testing.T) {
	var l hunks.Line
	if err := json.Unmarshal([]byte(`{"op":"insert","text":"x","eol":"\n"}`), &l); err == nil {
		t.Error("an unknown op was accepted")
	}
	if _, err := json.Marshal(hunks.Line{Op: '?'}); err == nil {
		t.Error("an invalid op was marshalled")
	}
}
