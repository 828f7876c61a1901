// Package gitcheck checks a node's changed-file claims against git, and
// manages the git worktrees of isolated subgoals. It reads `git status
// --porcelain=v2 -z`, which neither quotes nor escapes paths, so paths with
// spaces, newlines or non-ASCII bytes, renames and copies come through as
// they are.
package gitcheck

import (
	"bytes"
	"fmt"
	"strings"
)

// Kind is the kind of a status entry.
type Kind byte

// Entry kinds, as porcelain v2 marks them.
const (
	Ordinary  Kind = '1'
	Renamed   Kind = '2' // renamed or copied; Orig is the source
	Unmerged  Kind = 'u'
	Untracked Kind = '?'
	Ignored   Kind = '!'
)

// Entry is one line of `git status --porcelain=v2 -z`.
type Entry struct {
	Kind Kind
	// XY is the staged and worktree status ("M.", ".D", "R.", …); empty
	// for untracked and ignored entries.
	XY   string
	Path string
	// Orig is a rename's or copy's source path.
	Orig string
}

// fieldsBefore is how many space-separated fields precede the path in each
// kind of entry (the kind itself included).
var fieldsBefore = map[Kind]int{Ordinary: 8, Renamed: 9, Unmerged: 10, Untracked: 1, Ignored: 1}

// ParseStatus parses the output of `git status --porcelain=v2 -z`. Header
// lines (# …) are skipped.
func ParseStatus(out []byte) ([]Entry, error) {
	recs := bytes.Split(out, []byte{0})
	if n := len(recs); n > 0 && len(recs[n-1]) == 0 {
		recs = recs[:n-1]
	}
	var entries []Entry
	for i := 0; i < len(recs); i++ {
		rec := recs[i]
		if len(rec) == 0 {
			return nil, fmt.Errorf("git status: empty record %d", i+1)
		}
		k := Kind(rec[0])
		if k == '#' {
			continue
		}
		n, ok := fieldsBefore[k]
		if !ok {
			return nil, fmt.Errorf("git status: record %d: unknown kind %q", i+1, rec[0])
		}
		parts := strings.SplitN(string(rec), " ", n+1)
		if len(parts) != n+1 || parts[n] == "" {
			return nil, fmt.Errorf("git status: record %d: want %d fields and a path: %q", i+1, n, clip(rec))
		}
		e := Entry{Kind: k, Path: parts[n]}
		if k == Ordinary || k == Renamed || k == Unmerged {
			e.XY = parts[1]
			if len(e.XY) != 2 {
				return nil, fmt.Errorf("git status: record %d: bad XY %q", i+1, e.XY)
			}
		}
		if k == Renamed {
			if i+1 >= len(recs) || len(recs[i+1]) == 0 {
				return nil, fmt.Errorf("git status: record %d: a rename without its source path", i+1)
			}
			i++
			e.Orig = string(recs[i])
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func clip(b []byte) string {
	if len(b) > 80 {
		b = b[:80]
	}
	return string(b)
}
