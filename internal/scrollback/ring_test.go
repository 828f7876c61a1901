package scrollback

import (
	"bytes"
	"strings"
	"testing"
)

func TestRingKeepsMostRecentOutput(t *testing.T) {
	tests := []struct {
		name        string
		size        int
		writes      []string
		want        string
		wantDropped bool
	}{
		{"empty", 8, nil, "", false},
		{"partly filled", 8, []string{"abc", "", "de"}, "abcde", false},
		{"exactly full", 8, []string{"abcd", "efgh"}, "abcdefgh", false},
		{"one past full", 8, []string{"abcdefgh", "i"}, "bcdefghi", true},
		{"wraps across writes", 8, []string{"abcde", "fghij"}, "cdefghij", true},
		{"write larger than the ring", 8, []string{"ab", "cdefghijkl"}, "efghijkl", true},
		{"wraps many times", 3, []string{"ab", "cd", "ef", "g"}, "efg", true},
		{"no scrollback", 0, []string{"abc"}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := New(tt.size)
			for _, w := range tt.writes {
				r.Write([]byte(w))
			}
			if got := string(r.snapshot()); got != tt.want || r.Dropped() != tt.wantDropped {
				t.Errorf("snapshot %q (dropped %v), want %q (dropped %v)", got, r.Dropped(), tt.want, tt.wantDropped)
			}
		})
	}
}

func TestAlignReplayStartsAtABoundary(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"cut line dropped", "tail of a line\r\nnext line\r\n", "next line\r\n"},
		{"cut character dropped", "\x80\x80é and more", "é and more"},
		{"newline too far in", "\x80" + strings.Repeat("x", alignScan) + "\nend", strings.Repeat("x", alignScan) + "\nend"},
		{"nothing to align", "plain", "plain"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(alignReplay([]byte(tt.in))); got != tt.want {
				t.Errorf("alignReplay(%q) = %q, want %q", tail(tt.in), tail(got), tail(tt.want))
			}
		})
	}
}

// FuzzRing checks the ring against the obvious model: the last size bytes
// of everything written, however the writes are split.
func FuzzRing(f *testing.F) {
	f.Add(uint8(8), []byte("abcdefghij"), []byte{3, 2})
	f.Add(uint8(1), []byte("xy"), []byte{})
	f.Fuzz(func(t *testing.T, size uint8, data, splits []byte) {
		r := New(int(size))
		rest := data
		for _, s := range splits {
			n := min(int(s), len(rest))
			r.Write(rest[:n])
			rest = rest[n:]
		}
		r.Write(rest)
		want := data[max(0, len(data)-int(size)):]
		if got := r.snapshot(); !bytes.Equal(got, want) {
			t.Fatalf("size %d: snapshot %q, want %q", size, got, want)
		}
		if r.Dropped() != (len(data) > int(size)) {
			t.Fatalf("size %d after %d bytes: dropped %v", size, len(data), r.Dropped())
		}
	})
}

// tail shortens s to its end for a failure message.
func tail(s string) string {
	const keep = 80
	if len(s) > keep {
		return "…" + s[len(s)-keep:]
	}
	return s
}

func TestReplayStartsAtALineOnceOutputWasDropped(t *testing.T) {
	r := New(16)
	r.Write([]byte("one\n"))
	if got := string(r.Replay()); got != "one\n" {
		t.Fatalf("before the limit: %q", got)
	}
	r.Write([]byte("two\nthree\nfour\n"))
	// 19 bytes: the last 16 start with the newline after "one".
	if got := string(r.Replay()); got != "two\nthree\nfour\n" {
		t.Fatalf("past the limit: %q", got)
	}
	for range 10 {
		r.Write([]byte("0123456789"))
	}
	if got := string(r.Replay()); got != "4567890123456789" {
		t.Fatalf("after many writes: %q", got)
	}
	// No line start: cut at a character start, not inside a character.
	u := New(5)
	u.Write([]byte("ééééé"))
	if got := string(u.Replay()); got != "éé" {
		t.Fatalf("utf-8: %q", got)
	}
}
