package term

import (
	"bytes"
	"fmt"
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
			r := newRing(tt.size)
			for _, w := range tt.writes {
				r.write([]byte(w))
			}
			if got := string(r.snapshot()); got != tt.want || r.dropped != tt.wantDropped {
				t.Errorf("snapshot %q (dropped %v), want %q (dropped %v)", got, r.dropped, tt.want, tt.wantDropped)
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
		r := newRing(int(size))
		rest := data
		for _, s := range splits {
			n := min(int(s), len(rest))
			r.write(rest[:n])
			rest = rest[n:]
		}
		r.write(rest)
		want := data[max(0, len(data)-int(size)):]
		if got := r.snapshot(); !bytes.Equal(got, want) {
			t.Fatalf("size %d: snapshot %q, want %q", size, got, want)
		}
		if r.dropped != (len(data) > int(size)) {
			t.Fatalf("size %d after %d bytes: dropped %v", size, len(data), r.dropped)
		}
	})
}

func TestNextPieceSplitsAndJoinsWithinTheBound(t *testing.T) {
	big := bytes.Repeat([]byte("b"), MaxDataBytes+10)
	half := bytes.Repeat([]byte("h"), MaxDataBytes/2)
	tests := []struct {
		name  string
		batch [][]byte
		sizes []int // of the pieces, in order
	}{
		{"one small chunk", [][]byte{[]byte("abc")}, []int{3}},
		{"small chunks joined", [][]byte{[]byte("ab"), []byte("cd"), []byte("e")}, []int{5}},
		{"large chunk split", [][]byte{big}, []int{MaxDataBytes, 10}},
		{"join stops at the bound", [][]byte{half, half, []byte("x")}, []int{MaxDataBytes, 1}},
		{"chunk too big to join goes alone", [][]byte{[]byte("a"), big}, []int{1, MaxDataBytes, 10}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := bytes.Join(tt.batch, nil)
			var got []byte
			var sizes []int
			batch := tt.batch
			for len(batch) > 0 {
				var p []byte
				p, batch = nextPiece(batch)
				sizes = append(sizes, len(p))
				got = append(got, p...)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("pieces do not add up to the batch")
			}
			if fmt.Sprint(sizes) != fmt.Sprint(tt.sizes) {
				t.Errorf("piece sizes %v, want %v", sizes, tt.sizes)
			}
		})
	}
}

func TestJoinedPiecesAreNotReused(t *testing.T) {
	p1, _ := nextPiece([][]byte{[]byte("ab"), []byte("cd")})
	p2, _ := nextPiece([][]byte{[]byte("wx"), []byte("yz")})
	if string(p1) != "abcd" || string(p2) != "wxyz" {
		t.Errorf("first piece %q, second %q: a kept piece changed", p1, p2)
	}
}
