package hunks

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"
)

func TestTokenRunesAreDistinctValidRunes(t *testing.T) {
	for _, tok := range []int32{0, 1, surrogateMin - 1, surrogateMin, surrogateMin + 1, runeCapacity - 1} {
		r := tokenRune(tok)
		if !utf8.ValidRune(r) {
			t.Errorf("token %#x maps to invalid rune %#x", tok, r)
		}
	}
	if got := tokenRune(runeCapacity - 1); got != utf8.MaxRune {
		t.Errorf("the last token maps to %#x, want %#x", got, utf8.MaxRune)
	}
	if tokenRune(surrogateMin-1) == tokenRune(surrogateMin) {
		t.Error("tokens around the surrogate range collide")
	}
}

// The tokens right below and above the surrogate range, and the last one,
// survive diff-match-patch's string conversions.
func TestDiffTokensAtRuneRangeEdges(t *testing.T) {
	hi := int32(runeCapacity - 1)
	ta := []int32{surrogateMin - 1, surrogateMin, hi, 5, surrogateMin + 7}
	tb := []int32{surrogateMin, 9, hi, surrogateMin + 7, surrogateMin - 1}
	blocks, err := diffTokens(ta, tb, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	checkScript(t, ta, tb, blocks)
	if kept := len(ta) - changedOld(blocks); kept != 3 {
		t.Errorf("script keeps %d tokens, want the 3 of the longest common subsequence", kept)
	}
}

// Past the token capacity the diff goes window by window and stays exact.
func TestWindowedDiffIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	for round := range 300 {
		n := 1 + r.IntN(120)
		a := make([][]byte, n)
		for i := range a {
			a[i] = fmt.Appendf(nil, "%d\n", r.IntN(n*2))
		}
		b := make([][]byte, 0, n)
		for _, line := range a {
			switch r.IntN(10) {
			case 0:
			case 1:
				b = append(b, fmt.Appendf(nil, "new %d\n", r.IntN(5)), line)
			case 2:
				b = append(b, []byte("changed\n"))
			default:
				b = append(b, line)
			}
		}
		capacity := 4 + r.IntN(20)
		blocks, err := lineDiff(a, b, time.Second, capacity)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := replay(a, b, blocks); err != nil {
			t.Fatalf("round %d, capacity %d: %v", round, capacity, err)
		}
	}
}

// One changed line among many distinct ones, each side past the capacity,
// still comes out as one small block.
func TestWindowedDiffStaysLocal(t *testing.T) {
	var a, b [][]byte
	for i := range 500 {
		a = append(a, fmt.Appendf(nil, "line %d\n", i))
		b = append(b, fmt.Appendf(nil, "line %d\n", i))
	}
	a[0], b[0] = []byte("first old\n"), []byte("first new\n")
	a[499] = []byte("last old\n")
	b[250] = []byte("middle new\n")
	blocks, err := lineDiff(a, b, time.Second, 40)
	if err != nil {
		t.Fatal(err)
	}
	if err := replay(a, b, blocks); err != nil {
		t.Fatal(err)
	}
	want := []block{{0, 1, 0, 1}, {250, 251, 250, 251}, {499, 500, 499, 500}}
	if fmt.Sprint(blocks) != fmt.Sprint(want) {
		t.Errorf("blocks %v, want %v", blocks, want)
	}
}

// replay checks that blocks turn a into b: the lines between blocks are
// equal, blocks are ordered and separated, and the ends meet.
func replay(a, b [][]byte, blocks []block) error {
	i, j := 0, 0
	for k, bl := range blocks {
		if bl.a0 < i || bl.b0 < j || bl.a1 < bl.a0 || bl.b1 < bl.b0 || bl.a0-i != bl.b0-j {
			return fmt.Errorf("block %d %v out of order after (%d,%d)", k, bl, i, j)
		}
		if k > 0 && bl.a0 == i {
			return fmt.Errorf("block %d %v touches the previous one", k, bl)
		}
		for ; i < bl.a0; i, j = i+1, j+1 {
			if !bytes.Equal(a[i], b[j]) {
				return fmt.Errorf("unequal lines %d and %d kept", i, j)
			}
		}
		i, j = bl.a1, bl.b1
	}
	if len(a)-i != len(b)-j {
		return fmt.Errorf("tails differ in length after (%d,%d)", i, j)
	}
	for ; i < len(a); i, j = i+1, j+1 {
		if !bytes.Equal(a[i], b[j]) {
			return fmt.Errorf("unequal lines %d and %d kept", i, j)
		}
	}
	return nil
}

func checkScript(t *testing.T, ta, tb []int32, blocks []block) {
	t.Helper()
	a, b := make([][]byte, len(ta)), make([][]byte, len(tb))
	for i, tok := range ta {
		a[i] = fmt.Append(nil, tok)
	}
	for i, tok := range tb {
		b[i] = fmt.Append(nil, tok)
	}
	if err := replay(a, b, blocks); err != nil {
		t.Fatal(err)
	}
}

func changedOld(blocks []block) int {
	n := 0
	for _, bl := range blocks {
		n += bl.a1 - bl.a0
	}
	return n
}

// Lines whose hashes collide are still told apart.
func TestLineSetCollisions(t *testing.T) {
	for _, hash := range []func([]byte) uint64{
		func([]byte) uint64 { return 42 },               // every line collides
		func(l []byte) uint64 { return uint64(len(l)) }, // lines of a length collide
	} {
		s := newLineSet(0)
		s.hash = hash
		lines := []string{"a\n", "b\n", "a\n", "cc\n", "b\n", "dd\n", "cc\n", ""}
		ids := map[string]int32{}
		for _, l := range lines {
			id := s.add([]byte(l))
			if prev, ok := ids[l]; ok && prev != id {
				t.Errorf("%q numbered %d, then %d", l, prev, id)
			}
			ids[l] = id
		}
		if len(s.lines) != 5 {
			t.Errorf("%d distinct lines, want 5", len(s.lines))
		}
		for l, want := range ids {
			if got, ok := s.find([]byte(l)); !ok || got != want {
				t.Errorf("find(%q) = %d, %v; want %d", l, got, ok, want)
			}
		}
		for _, l := range []string{"e\n", "a", "ccc\n"} {
			if id, ok := s.find([]byte(l)); ok {
				t.Errorf("find(%q) = %d for a line never added", l, id)
			}
		}
	}
}
