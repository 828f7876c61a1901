package hunks

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// ContextLines is the number of unchanged lines kept on each side of a
// change. Changes separated by at most twice as many unchanged lines share
// a hunk, as in git.
const ContextLines = 3

// DefaultTimeout bounds the search for a minimal diff; see Options.Timeout.
const DefaultTimeout = 2 * time.Second

// Options tunes Diff.
type Options struct {
	// Timeout bounds the time spent looking for a minimal line diff of
	// one pair of files. Past it the remaining differences are reported
	// coarser (fewer, larger hunks) but still exact. Zero means
	// DefaultTimeout; a negative value means no limit.
	Timeout time.Duration
}

// Diff compares two versions of the file at path with default Options.
func Diff(path string, old, new Snapshot) (*Edit, error) {
	return Options{}.Diff(path, old, new)
}

// Diff compares two versions of the file at path and splits the difference
// into hunks. Either version may be absent (a created or deleted file), not
// both. Equal versions give an edit without hunks. path names the file in
// patches and errors; for git apply it should be slash-separated and
// relative to the repository root. Diff copies what it keeps of old and new.
func (o Options) Diff(path string, old, new Snapshot) (*Edit, error) {
	if path == "" {
		return nil, errors.New("diff: empty path")
	}
	if !old.Exists && !new.Exists {
		return nil, fmt.Errorf("diff %s: both versions are absent", path)
	}
	e := &Edit{Path: path, Kind: KindModify, OldSize: len(old.Data), NewSize: len(new.Data), Hunks: []Hunk{}}
	switch {
	case !old.Exists:
		e.Kind, e.OldSize = KindCreate, 0
	case !new.Exists:
		e.Kind, e.NewSize = KindDelete, 0
	}
	if old.Exists {
		e.OldBlob = BlobID(old.Data)
	}
	if new.Exists {
		e.NewBlob = BlobID(new.Data)
	}
	if e.Kind == KindModify && bytes.Equal(old.Data, new.Data) {
		return e, nil
	}
	if (old.Exists && IsBinary(old.Data)) || (new.Exists && IsBinary(new.Data)) {
		e.Binary = true
		e.contents = &binaryContents{}
		if old.Exists {
			e.contents.old = append([]byte{}, old.Data...)
		}
		if new.Exists {
			e.contents.new = append([]byte{}, new.Data...)
		}
		e.Hunks = []Hunk{{
			ID:     "h1",
			Header: fmt.Sprintf("binary %d → %d bytes", e.OldSize, e.NewSize),
			Lines:  []Line{},
		}}
		return e, nil
	}

	timeout := o.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	var err error
	if e.Hunks, err = diffText(old.Data, new.Data, timeout); err != nil {
		return nil, fmt.Errorf("diff %s: %w", path, err)
	}
	if len(e.Hunks) == 0 && e.Kind != KindModify {
		// Creating or deleting an empty file changes no line, yet it is
		// still a decision for the reviewer.
		e.Hunks = []Hunk{{ID: "h1", Header: formatHeader(0, 0, 0, 0), Lines: []Line{}}}
	}
	for _, h := range e.Hunks {
		e.Added += h.Added
		e.Removed += h.Removed
	}
	return e, nil
}

// diffText returns the hunks turning text old into text new.
func diffText(old, new []byte, timeout time.Duration) ([]Hunk, error) {
	// Only the lines between the shared head and tail need diffing, and
	// only those and ContextLines lines on each side need splitting; a
	// small change to a big file stays cheap.
	head, tail := sharedEdges(old, new)
	from := linesBack(old, head, ContextLines)
	to := linesOn(old, len(old)-tail, ContextLines)
	margin := to - (len(old) - tail)
	a := splitLines(old[from:to])
	b := splitLines(new[from : len(new)-tail+margin])
	before := bytes.Count(old[from:head], []byte{'\n'})
	after := len(splitLines(old[len(old)-tail : to]))
	blocks, err := lineDiff(a[before:len(a)-after], b[before:len(b)-after], timeout, runeCapacity)
	if err != nil {
		return nil, err
	}
	shiftBlocks(blocks, before, before)
	return buildHunks(a, b, blocks, bytes.Count(old[:from], []byte{'\n'})), nil
}

// linesBack returns the start of the line n lines before the line starting
// at offset at, or 0.
func linesBack(data []byte, at, n int) int {
	for ; n > 0 && at > 0; n-- {
		at = bytes.LastIndexByte(data[:at-1], '\n') + 1
	}
	return at
}

// linesOn returns the offset just past the n lines starting at offset at,
// or the end of data.
func linesOn(data []byte, at, n int) int {
	for ; n > 0 && at < len(data); n-- {
		i := bytes.IndexByte(data[at:], '\n')
		if i < 0 {
			return len(data)
		}
		at += i + 1
	}
	return at
}

// sharedEdges returns the byte lengths of the head and the tail that old
// and new share as whole lines, without overlapping.
func sharedEdges(old, new []byte) (head, tail int) {
	head = bytes.LastIndexByte(old[:commonPrefix(old, new)], '\n') + 1
	limit := min(len(old), len(new)) - head
	tail = commonSuffix(old[len(old)-limit:], new[len(new)-limit:])
	lineStart := func(data []byte, at int) bool { return at == 0 || data[at-1] == '\n' }
	if tail == 0 || (lineStart(old, len(old)-tail) && lineStart(new, len(new)-tail)) {
		return head, tail
	}
	// The shared text holds its newlines at the same places in both, so
	// the line after its first newline starts a line in both.
	i := bytes.IndexByte(old[len(old)-tail:], '\n')
	if i < 0 {
		return head, 0
	}
	return head, tail - (i + 1)
}

// commonPrefix returns the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	const chunk = 4096
	n, i := min(len(a), len(b)), 0
	for i+chunk <= n && bytes.Equal(a[i:i+chunk], b[i:i+chunk]) {
		i += chunk
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// commonSuffix returns the length of the longest common suffix of a and b.
func commonSuffix(a, b []byte) int {
	const chunk = 4096
	n, i := min(len(a), len(b)), 0
	for i+chunk <= n && bytes.Equal(a[len(a)-i-chunk:len(a)-i], b[len(b)-i-chunk:len(b)-i]) {
		i += chunk
	}
	for i < n && a[len(a)-1-i] == b[len(b)-1-i] {
		i++
	}
	return i
}

// buildHunks groups blocks into hunks with ContextLines of context,
// merging blocks whose context would touch or overlap, and numbers them.
// a and b start at line skipped+1 of their files; they hold every line a
// hunk may need as context.
func buildHunks(a, b [][]byte, blocks []block, skipped int) []Hunk {
	hunks := []Hunk{}
	for first := 0; first < len(blocks); {
		last := first
		for last+1 < len(blocks) && blocks[last+1].a0-blocks[last].a1 <= 2*ContextLines {
			last++
		}
		f, l := blocks[first], blocks[last]
		a0 := max(f.a0-ContextLines, 0)
		a1 := min(l.a1+ContextLines, len(a))
		b0 := f.b0 - (f.a0 - a0)
		b1 := l.b1 + (a1 - l.a1)

		h := Hunk{
			ID:       fmt.Sprintf("h%d", len(hunks)+1),
			OldStart: rangeStart(skipped+a0, a1-a0),
			OldLines: a1 - a0,
			NewStart: rangeStart(skipped+b0, b1-b0),
			NewLines: b1 - b0,
			Lines:    make([]Line, 0, (a1-a0)+(b1-b0)),
		}
		next := a0
		for _, bl := range blocks[first : last+1] {
			for ; next < bl.a0; next++ {
				h.Lines = append(h.Lines, newLine(OpContext, a[next]))
			}
			for _, line := range a[bl.a0:bl.a1] {
				h.Lines = append(h.Lines, newLine(OpDelete, line))
			}
			for _, line := range b[bl.b0:bl.b1] {
				h.Lines = append(h.Lines, newLine(OpAdd, line))
			}
			h.Removed += bl.a1 - bl.a0
			h.Added += bl.b1 - bl.b0
			next = bl.a1
		}
		for ; next < a1; next++ {
			h.Lines = append(h.Lines, newLine(OpContext, a[next]))
		}
		h.Header = formatHeader(h.OldStart, h.OldLines, h.NewStart, h.NewLines)
		hunks = append(hunks, h)
		first = last + 1
	}
	return hunks
}
