package cli

import (
	"bytes"
	"testing"
)

func TestDetachKeys(t *testing.T) {
	tests := []struct {
		name   string
		reads  []string
		sent   string
		detach bool
	}{
		{"plain typing passes through", []string{"ls -l\r"}, "ls -l\r", false},
		{"Ctrl-] q detaches", []string{"ab\x1dq"}, "ab", true},
		{"the sequence split across reads", []string{"ab\x1d", "q"}, "ab", true},
		{"bytes after the sequence are dropped", []string{"a\x1dqrm -rf\r"}, "a", true},
		{"Ctrl-] then another key sends both", []string{"\x1dx"}, "\x1dx", false},
		{"Ctrl-] twice sends one", []string{"\x1d\x1d", "q"}, "\x1dq", false},
		{"a lone Ctrl-] waits for the next key", []string{"a\x1d"}, "a", false},
		{"Ctrl-c is the program's", []string{"\x03"}, "\x03", false},
		{"capital Q does not detach", []string{"\x1dQ"}, "\x1dQ", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var d detachKeys
			var sent []byte
			detach := false
			for _, r := range tc.reads {
				sent, detach = d.feed(sent, []byte(r))
				if detach {
					break
				}
			}
			if string(sent) != tc.sent || detach != tc.detach {
				t.Fatalf("sent %q detach %v, want %q %v", sent, detach, tc.sent, tc.detach)
			}
		})
	}
}

// FuzzDetachKeys checks that how the input is split into reads never
// changes what is sent or whether it detaches.
func FuzzDetachKeys(f *testing.F) {
	f.Add([]byte("ab\x1dqcd"), 3)
	f.Add([]byte("\x1d\x1d\x1dq"), 2)
	f.Add([]byte("\x1dx\x1d"), 1)
	f.Fuzz(func(t *testing.T, p []byte, split int) {
		var whole detachKeys
		want, wantDetach := whole.feed(nil, p)
		if split < 0 {
			split = -split
		}
		split %= len(p) + 1
		var parts detachKeys
		got, detach := parts.feed(nil, p[:split])
		if !detach {
			got, detach = parts.feed(got, p[split:])
		}
		if !bytes.Equal(got, want) || detach != wantDetach {
			t.Fatalf("split at %d: sent %q detach %v; whole: %q %v", split, got, detach, want, wantDetach)
		}
		if len(want) > len(p) {
			t.Fatalf("sent %q, more than was typed (%q)", want, p)
		}
		if !bytes.ContainsRune(p, detachPrefix) && !bytes.Equal(want, p) {
			t.Fatalf("sent %q for %q, which has no Ctrl-]", want, p)
		}
	})
}

func TestAltScreenFollowsTheLastSwitch(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		on     bool
	}{
		{"plain output", []string{"hello\r\n"}, false},
		{"entered", []string{"\x1b[?1049h\x1b[H"}, true},
		{"entered then left", []string{"\x1b[?1049hvim\x1b[?1049l"}, false},
		{"left then entered in one chunk", []string{"\x1b[?1049l$ vim\x1b[?1049h"}, true},
		{"entered across chunks", []string{"abc\x1b[?10", "49hdef"}, true},
		{"left across chunks", []string{"\x1b[?1049h", "x\x1b[?1049", "l"}, false},
		{"split after one byte", []string{"\x1b", "[?1049h"}, true},
		{"tiny chunks", []string{"\x1b", "[", "?", "1", "0", "4", "9", "h"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var a altScreen
			for _, c := range tc.chunks {
				a.scan([]byte(c))
			}
			if a.on != tc.on {
				t.Fatalf("on = %v, want %v", a.on, tc.on)
			}
		})
	}
}
