package hunks

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// randomEdit returns n lines, a share of them repeated (so that some lines
// are unique and some are not), and an edited copy: lines deleted,
// replaced, inserted, and a block moved.
func randomEdit(r *rand.Rand, n int) (a, b [][]byte) {
	a = make([][]byte, n)
	for i := range a {
		if r.IntN(4) == 0 {
			a[i] = fmt.Appendf(nil, "common %d\n", r.IntN(20))
		} else {
			a[i] = fmt.Appendf(nil, "line %d\n", i)
		}
	}
	for _, line := range a {
		switch r.IntN(40) {
		case 0:
		case 1:
			b = append(b, fmt.Appendf(nil, "new %d\n", r.IntN(50)), line)
		case 2:
			b = append(b, []byte("changed\n"))
		default:
			b = append(b, line)
		}
	}
	if len(b) > 100 {
		// Move a block of 20 lines from the front to the back.
		moved := append([][]byte{}, b[10:30]...)
		b = append(append(b[:10:10], b[30:]...), moved...)
	}
	return a, b
}

// TestAnchoredDiffIsExact diffs big random pairs through the anchors and
// replays the blocks: they must turn the old lines into the new exactly.
func TestAnchoredDiffIsExact(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 1))
	for round := range 40 {
		a, b := randomEdit(r, anchorMinLines+r.IntN(3000))
		blocks, err := lineDiff(a, b, time.Minute, runeCapacity)
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if err := replay(a, b, blocks); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
}

// TestAnchoredDiffMatchesMyersOnScatteredChanges checks that splitting at
// anchors finds the same changes as one Myers diff of the whole file where
// the changes are scattered among unique lines, the case it is for.
func TestAnchoredDiffMatchesMyersOnScatteredChanges(t *testing.T) {
	var a, b [][]byte
	for i := range 20_000 {
		line := fmt.Appendf(nil, "\tline %d: value\n", i)
		a = append(a, line)
		switch i % 97 {
		case 13:
			b = append(b, fmt.Appendf(nil, "\tline %d: changed\n", i))
		case 50:
			b = append(b, line, []byte("\tinserted\n"))
		case 70:
		default:
			b = append(b, line)
		}
	}
	ta, tb, ntok, ok := tokenize(a, b, runeCapacity)
	if !ok {
		t.Fatal("tokenize")
	}
	anchored, err := anchoredDiff(ta, tb, ntok, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	myers, err := diffTokens(ta, tb, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(anchored) != fmt.Sprint(myers) {
		t.Fatalf("anchored diff has %d blocks, Myers %d", len(anchored), len(myers))
	}
}

func TestIncreasingRun(t *testing.T) {
	pairs := []anchor{{0, 5}, {1, 1}, {2, 2}, {3, 9}, {4, 3}, {5, 4}, {6, 0}}
	got := fmt.Sprint(increasingRun(pairs))
	if want := "[{1 1} {2 2} {4 3} {5 4}]"; got != want {
		t.Fatalf("increasingRun = %s, want %s", got, want)
	}
}
