package term

import (
	"bytes"
	"fmt"
	"testing"
)

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
