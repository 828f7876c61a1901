package hunks

import (
	"bytes"
	"errors"
	"fmt"
	"hash/maphash"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
)

// block is one run of changed lines: old lines [a0,a1) become new lines
// [b0,b1). Blocks are ordered, and consecutive blocks are separated by at
// least one unchanged line.
type block struct {
	a0, a1, b0, b1 int
}

// shiftBlocks moves blocks found in sub-slices starting at old line da and
// new line db to the lines of the whole.
func shiftBlocks(blocks []block, da, db int) {
	for i := range blocks {
		blocks[i].a0 += da
		blocks[i].a1 += da
		blocks[i].b0 += db
		blocks[i].b1 += db
	}
}

// lineDiff returns the changed blocks turning lines a into lines b.
func lineDiff(a, b [][]byte, timeout time.Duration, capacity int) ([]block, error) {
	// Strip equal heads and tails before hashing any line.
	p := 0
	for p < len(a) && p < len(b) && bytes.Equal(a[p], b[p]) {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && bytes.Equal(a[len(a)-1-s], b[len(b)-1-s]) {
		s++
	}
	blocks, err := middleDiff(a[p:len(a)-s], b[p:len(b)-s], timeout, capacity)
	if err != nil {
		return nil, err
	}
	shiftBlocks(blocks, p, p)
	return blocks, nil
}

// middleDiff diffs a and b as token strings, or window by window when they
// share more distinct lines than there are tokens.
func middleDiff(a, b [][]byte, timeout time.Duration, capacity int) ([]block, error) {
	switch {
	case len(a) == 0 && len(b) == 0:
		return nil, nil
	case len(a) == 0 || len(b) == 0:
		return []block{{0, len(a), 0, len(b)}}, nil
	}
	ta, tb, ntok, ok := tokenize(a, b, capacity)
	if !ok {
		return windowedDiff(a, b, timeout, capacity)
	}
	if len(ta)+len(tb) >= anchorMinLines {
		return anchoredDiff(ta, tb, ntok, timeout)
	}
	return diffTokens(ta, tb, timeout)
}

// windowedDiff diffs a and b through windows of capacity-2 lines a side,
// which never hold more distinct shared lines than there are tokens. Only
// the part of each window's script inside the window's first half is kept,
// since alignment near a window's far edge is a guess; any prefix of an
// edit script is a valid script for the prefixes it consumes, so the result
// is exact, if coarser than a whole-file diff.
func windowedDiff(a, b [][]byte, timeout time.Duration, capacity int) ([]block, error) {
	window := capacity - 2
	half := max(window/2, 1)
	var blocks []block
	add := func(bl block) {
		if bl.a0 == bl.a1 && bl.b0 == bl.b1 {
			return
		}
		if n := len(blocks); n > 0 && blocks[n-1].a1 == bl.a0 && blocks[n-1].b1 == bl.b0 {
			blocks[n-1].a1, blocks[n-1].b1 = bl.a1, bl.b1
			return
		}
		blocks = append(blocks, bl)
	}
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		wa, wb := a[i:min(i+window, len(a))], b[j:min(j+window, len(b))]
		last := i+len(wa) == len(a) && j+len(wb) == len(b)
		ta, tb, _, ok := tokenize(wa, wb, capacity)
		if !ok {
			return nil, errors.New("line window exceeds the token capacity")
		}
		script, err := diffTokens(ta, tb, timeout)
		if err != nil {
			return nil, err
		}
		if last {
			for _, bl := range script {
				add(block{bl.a0 + i, bl.a1 + i, bl.b0 + j, bl.b1 + j})
			}
			return blocks, nil
		}
		ci, cj := cutScript(script, len(wa), half)
		for _, bl := range script {
			if bl.a0 >= ci && bl.b0 >= cj {
				break
			}
			add(block{bl.a0 + i, min(bl.a1, ci) + i, bl.b0 + j, min(bl.b1, cj) + j})
		}
		i, j = i+ci, j+cj
	}
	add(block{i, len(a), j, len(b)})
	return blocks, nil
}

// cutScript returns the furthest point (ci, cj) of the edit script given by
// blocks over na old lines with ci <= limit and cj <= limit. Every script
// step moves at least one line, so for limit >= 1 the point is past (0, 0).
func cutScript(blocks []block, na, limit int) (ci, cj int) {
	i, j := 0, 0
	walkEqual := func(n int) bool {
		step := min(n, limit-i, limit-j)
		i, j = i+step, j+step
		return step == n
	}
	for _, bl := range blocks {
		if !walkEqual(bl.a0 - i) {
			return i, j
		}
		// Inside a change block deletions and insertions can be taken in
		// any proportion; take as many of each as the limit allows.
		i, j = min(bl.a1, limit), min(bl.b1, limit)
		if i < bl.a1 || j < bl.b1 {
			return i, j
		}
	}
	walkEqual(na - i)
	return i, j
}

// tokenize maps every line to a token so that two lines get the same token
// exactly when they are equal. Lines found on one side only can never
// match, so all of a's get token 0 and all of b's token 1; that keeps the
// token count at the number of distinct shared lines plus two. It returns
// the token count, and reports false when that exceeds capacity.
func tokenize(a, b [][]byte, capacity int) (ta, tb []int32, ntok int, ok bool) {
	distinct := newLineSet(len(a))
	ta = make([]int32, len(a))
	for i, line := range a {
		ta[i] = distinct.add(line)
	}
	// token[id] is the final token of a's distinct line id, 0 until the
	// line is found in b too.
	token := make([]int32, len(distinct.lines))
	next := int32(2)
	tb = make([]int32, len(b))
	for j, line := range b {
		id, found := distinct.find(line)
		if !found {
			tb[j] = 1
			continue
		}
		if token[id] == 0 {
			if int(next) >= capacity {
				return nil, nil, 0, false
			}
			token[id] = next
			next++
		}
		tb[j] = token[id]
	}
	for i, id := range ta {
		ta[i] = token[id]
	}
	return ta, tb, int(next), true
}

// lineSet numbers distinct lines. It is an open-addressing hash table of
// 64-bit line hashes, which spares a string copy of every line and, unlike
// a Go map, probes a flat array; lines whose hashes are equal are told
// apart by their bytes.
type lineSet struct {
	hash  func([]byte) uint64
	slots []slot   // a power of two, at most half full
	lines [][]byte // id → line
}

// slot holds a line's hash and its id plus one (0: empty).
type slot struct {
	hash uint64
	id   int32
}

func newLineSet(size int) *lineSet {
	seed := maphash.MakeSeed()
	n := 16
	for n < 2*size {
		n *= 2
	}
	return &lineSet{
		hash:  func(line []byte) uint64 { return maphash.Bytes(seed, line) },
		slots: make([]slot, n),
		lines: make([][]byte, 0, size),
	}
}

// lookup returns the slot that holds line, or the empty slot where it
// belongs.
func (s *lineSet) lookup(line []byte) *slot {
	h := s.hash(line)
	mask := uint64(len(s.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &s.slots[i]
		if sl.id == 0 || (sl.hash == h && bytes.Equal(s.lines[sl.id-1], line)) {
			sl.hash = h
			return sl
		}
	}
}

// find returns the id of line, if it was added.
func (s *lineSet) find(line []byte) (int32, bool) {
	sl := s.lookup(line)
	return sl.id - 1, sl.id != 0
}

// add returns the id of line, numbering it if it is new.
func (s *lineSet) add(line []byte) int32 {
	if 2*(len(s.lines)+1) > len(s.slots) {
		s.grow()
	}
	sl := s.lookup(line)
	if sl.id == 0 {
		s.lines = append(s.lines, line)
		sl.id = int32(len(s.lines))
	}
	return sl.id - 1
}

func (s *lineSet) grow() {
	old := s.slots
	s.slots = make([]slot, 2*len(old))
	mask := uint64(len(s.slots) - 1)
	for _, sl := range old {
		if sl.id == 0 {
			continue
		}
		i := sl.hash & mask
		for s.slots[i].id != 0 {
			i = (i + 1) & mask
		}
		s.slots[i] = sl
	}
}

// runeCapacity is how many tokens fit in distinct valid runes: every code
// point except the surrogate range, which a Go string cannot carry.
const runeCapacity = utf8.MaxRune + 1 - surrogateCount

const (
	surrogateMin   = 0xD800
	surrogateCount = 0x800
)

// tokenRune maps token t to a rune, skipping the surrogate range.
func tokenRune(t int32) rune {
	if t >= surrogateMin {
		return rune(t + surrogateCount)
	}
	return rune(t)
}

// diffTokens runs diff-match-patch's Myers diff over two token sequences,
// one rune per line. This is its line mode with our own line hashing:
// DiffLinesToChars numbers lines into runes without regard for how many
// fit, and past about 1.1 million distinct lines, or in the surrogate
// range, distinct lines collapse into one rune and the diff goes wrong.
// tokenize numbers only the lines both sides share and reports when even
// those do not fit, and the runes are counted back into line positions
// here rather than joined back into text with DiffCharsToLines.
func diffTokens(ta, tb []int32, timeout time.Duration) ([]block, error) {
	ra, rb := make([]rune, len(ta)), make([]rune, len(tb))
	for i, t := range ta {
		ra[i] = tokenRune(t)
	}
	for i, t := range tb {
		rb[i] = tokenRune(t)
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = max(timeout, 0)
	diffs := dmp.DiffMainRunes(ra, rb, false)

	var blocks []block
	open := false
	i, j := 0, 0
	for _, d := range diffs {
		n := utf8.RuneCountInString(d.Text)
		switch d.Type {
		case diffmatchpatch.DiffEqual:
			if i+n > len(ta) || j+n > len(tb) {
				return nil, fmt.Errorf("line diff runs past the end of the lines")
			}
			for k := 0; k < n; k++ {
				if ta[i+k] != tb[j+k] {
					return nil, fmt.Errorf("line diff pairs unequal lines %d and %d", i+k+1, j+k+1)
				}
			}
			i, j = i+n, j+n
			open = false
			continue
		case diffmatchpatch.DiffDelete:
			if !open {
				blocks = append(blocks, block{i, i, j, j})
			}
			i += n
		case diffmatchpatch.DiffInsert:
			if !open {
				blocks = append(blocks, block{i, i, j, j})
			}
			j += n
		}
		open = true
		last := &blocks[len(blocks)-1]
		last.a1, last.b1 = i, j
	}
	if i != len(ta) || j != len(tb) {
		return nil, fmt.Errorf("line diff covers %d of %d old and %d of %d new lines", i, len(ta), j, len(tb))
	}
	return blocks, nil
}
