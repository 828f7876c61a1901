package hunks

import (
	"sort"
	"time"
)

// anchorMinLines is the size (old plus new lines, after the shared head and
// tail are cut) from which a diff is split at anchors first. Below it one
// Myers diff is cheap enough.
const anchorMinLines = 2048

// anchoredDiff diffs two token sequences by first matching the lines that
// occur exactly once in each (anchors, as patience diff does), keeping the
// longest run of them in the same order on both sides, and then diffing
// only the gaps between consecutive anchors with Myers. A big file with
// scattered changes becomes many small diffs, each of a few lines, rather
// than one search over the whole file; where no line is unique the gap is
// the whole file and the result is plain Myers.
func anchoredDiff(ta, tb []int32, ntok int, timeout time.Duration) ([]block, error) {
	anchors := uniqueAnchors(ta, tb, ntok)
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	var blocks []block
	i, j := 0, 0
	for k := 0; k <= len(anchors); k++ {
		ai, aj := len(ta), len(tb)
		if k < len(anchors) {
			ai, aj = int(anchors[k].i), int(anchors[k].j)
		}
		gap, err := gapDiff(ta[i:ai], tb[j:aj], deadline)
		if err != nil {
			return nil, err
		}
		shiftBlocks(gap, i, j)
		blocks = append(blocks, gap...)
		i, j = ai+1, aj+1
	}
	return blocks, nil
}

// gapDiff diffs the lines between two anchors: usually equal, or a few
// lines that differ.
func gapDiff(a, b []int32, deadline time.Time) ([]block, error) {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	a, b = a[p:len(a)-s], b[p:len(b)-s]
	var blocks []block
	switch {
	case len(a) == 0 && len(b) == 0:
		return nil, nil
	case len(a) == 0 || len(b) == 0:
		blocks = []block{{0, len(a), 0, len(b)}}
	default:
		timeout := time.Duration(-1)
		if !deadline.IsZero() {
			// Past the deadline go-diff reports what it has, coarser
			// but exact, as it does for one big diff.
			timeout = max(time.Until(deadline), time.Nanosecond)
		}
		var err error
		if blocks, err = diffTokens(a, b, timeout); err != nil {
			return nil, err
		}
	}
	shiftBlocks(blocks, p, p)
	return blocks, nil
}

// anchor pairs line i of the old side with line j of the new.
type anchor struct{ i, j int32 }

// uniqueAnchors returns the lines that occur exactly once on each side,
// paired, reduced to the longest run that is in order on both sides.
func uniqueAnchors(ta, tb []int32, ntok int) []anchor {
	// Tokens 0 and 1 are lines found on one side only.
	countA := make([]int32, ntok)
	countB := make([]int32, ntok)
	posB := make([]int32, ntok)
	for _, t := range ta {
		countA[t]++
	}
	for j, t := range tb {
		countB[t]++
		posB[t] = int32(j)
	}
	var pairs []anchor
	for i, t := range ta {
		if t >= 2 && countA[t] == 1 && countB[t] == 1 {
			pairs = append(pairs, anchor{int32(i), posB[t]})
		}
	}
	return increasingRun(pairs)
}

// increasingRun returns the longest subsequence of pairs (ordered by i)
// whose j also increase.
func increasingRun(pairs []anchor) []anchor {
	sorted := true
	for k := 1; k < len(pairs); k++ {
		if pairs[k].j < pairs[k-1].j {
			sorted = false
			break
		}
	}
	if sorted {
		return pairs
	}
	tails := []int{}
	prev := make([]int, len(pairs))
	for k, p := range pairs {
		n := sort.Search(len(tails), func(n int) bool { return pairs[tails[n]].j >= p.j })
		prev[k] = -1
		if n > 0 {
			prev[k] = tails[n-1]
		}
		if n == len(tails) {
			tails = append(tails, k)
		} else {
			tails[n] = k
		}
	}
	run := make([]anchor, len(tails))
	for n, k := len(tails)-1, tails[len(tails)-1]; n >= 0; n, k = n-1, prev[k] {
		run[n] = pairs[k]
	}
	return run
}
