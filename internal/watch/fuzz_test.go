package watch

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/corral-dev/corral/pkg/event"
)

// FuzzRender feeds the renderer events of any type with any data: it must
// never panic, and in plain mode never let a control character through to
// the terminal.
func FuzzRender(f *testing.F) {
	for _, c := range goldenCases {
		for _, e := range c.events {
			f.Add(e.typ, []byte(e.data))
		}
	}
	f.Fuzz(func(t *testing.T, typ string, data []byte) {
		st := NewState("s1")
		e := event.Event{Seq: 1, Type: event.Type(typ)}
		if json.Valid(data) {
			e.Data = data
		}
		// Twice, so that state left by the first is used by the second.
		for range 2 {
			for _, l := range Render(e, st, PlainStyle()) {
				if strings.ContainsFunc(l, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) {
					t.Fatalf("plain line holds a control character: %q", l)
				}
				if !utf8.ValidString(l) {
					t.Fatalf("line is not UTF-8: %q", l)
				}
			}
			Render(e, st, ANSIStyle())
		}
		_ = st.Streaming()
		_, _, _ = st.Activity()
	})
}

// FuzzParseLine checks typed lines of the plain mode: any input gives an
// action or an error, and a decision keeps its note.
func FuzzParseLine(f *testing.F) {
	for _, s := range []string{"y", "n not now", "A", "d keep it", "s use tabs", "m run the tests", "x", "q", "?", "", "  ", "zz top", "s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		a, err := parseLine(line)
		if err != nil {
			if a != (action{}) {
				t.Fatalf("error %v with action %+v", err, a)
			}
			return
		}
		if a.kind == 0 {
			t.Fatalf("no action and no error for %q", line)
		}
		if (a.kind == actSteer || a.kind == actSend) && strings.TrimSpace(a.text) == "" {
			t.Fatalf("empty %v text from %q", a.kind, line)
		}
	})
}

func TestCleanKeepsTextAndDefusesControls(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"tab\there", "tab    here"},
		{"\x1b[2J\x1b]0;title\a", "^[[2J^[]0;title^G"},
		{"del\x7f", "del^?"},
		{"c1\u009bx", "c1\uFFFDx"},
		{"bad \xff byte", "bad \uFFFD byte"},
		{"wide 漢字 ok", "wide 漢字 ok"},
	}
	for _, tt := range tests {
		if got := clean(tt.in); got != tt.want {
			t.Errorf("clean(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestParseLineReadsKeysNotesAndTexts(t *testing.T) {
	tests := []struct {
		line string
		want action
		err  bool
	}{
		{"y", action{kind: actDecide, choice: ChoiceYes}, false},
		{"n  not now ", action{kind: actDecide, choice: ChoiceNo, text: "not now"}, false},
		{"A looks right", action{kind: actDecide, choice: ChoiceAllYes, text: "looks right"}, false},
		{"d", action{kind: actDecide, choice: ChoiceAllNo}, false},
		{"s keep it short", action{kind: actSteer, text: "keep it short"}, false},
		{"message run the tests", action{kind: actSend, text: "run the tests"}, false},
		{"x", action{kind: actStop}, false},
		{"quit", action{kind: actQuit}, false},
		{"?", action{kind: actHelp}, false},
		{"s", action{}, true},
		{"", action{}, true},
		{"yes", action{}, true},
	}
	for _, tt := range tests {
		got, err := parseLine(tt.line)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("parseLine(%q) = %+v, %v; want %+v, error %v", tt.line, got, err, tt.want, tt.err)
		}
	}
}
