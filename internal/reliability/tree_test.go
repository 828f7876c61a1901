package reliability

import (
	"bytes"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/corral-dev/corral/pkg/hunks"
)

// tree is a worktree's content outside .git: every file (a symlink by its
// target) and every folder.
type tree struct {
	files   map[string]fileState
	folders map[string]bool
}

type fileState struct {
	data []byte
	link bool
}

func snapshotTree(root string) (tree, error) {
	t := tree{files: map[string]fileState{}, folders: map[string]bool{}}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case d.IsDir() && d.Name() == ".git":
			return filepath.SkipDir
		case d.IsDir():
			t.folders[rel] = true
		case d.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice) != 0:
			// Not content (the scenario's FIFO); never captured.
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			t.files[rel] = fileState{data: []byte(target), link: true}
		default:
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			t.files[rel] = fileState{data: data}
		}
		return nil
	})
	return t, err
}

// paths lists every file path either tree holds, in order.
func paths(a, b tree) []string {
	set := maps.Clone(a.files)
	maps.Copy(set, b.files)
	return slices.Sorted(maps.Keys(set))
}

// changedBytes counts the bytes that differ between two versions of a
// file (nil: absent): all of a created or deleted file's, and of a
// modified one the span between their shared head and tail.
func changedBytes(a, b *fileState) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return len(b.data)
	case b == nil:
		return len(a.data)
	}
	x, y := a.data, b.data
	n := min(len(x), len(y))
	head := 0
	for head < n && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < n-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	return max(len(x), len(y)) - head - tail
}

func same(a, b *fileState) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.link == b.link && bytes.Equal(a.data, b.data)
}

func stateOf(t tree, p string) *fileState {
	if f, ok := t.files[p]; ok {
		return &f
	}
	return nil
}

// errUnexplained says the edits shown for a path do not lead from its
// version before the turn to its version after.
var errUnexplained = errors.New("the edits shown do not account for the change")

// explain checks that edits, in the order they were staged, take a
// path's version before (nil: absent) to its version after: each edit
// starts from the version the one before it left (by git blob id), a text
// edit's hunks applied to that version give exactly its new version, and
// the last one ends at after. A binary edit is shown by its sizes and blob
// ids, not its bytes, so its step is checked by blob id alone.
func explain(before, after *fileState, edits []*hunks.Edit) error {
	var cur hunks.Snapshot // the version reached, when its bytes are known
	known, blob := true, ""
	if before != nil {
		cur, blob = hunks.Present(before.data), hunks.BlobID(before.data)
	}
	for _, e := range edits {
		if e.OldBlob != blob {
			return errUnexplained
		}
		if e.Binary || !known {
			blob = e.NewBlob
			cur, known = hunks.Snapshot{}, blob == ""
			continue
		}
		next, err := e.Apply(cur, e.IDs())
		if err != nil {
			return err
		}
		cur, blob = next, ""
		if next.Exists {
			blob = hunks.BlobID(next.Data)
		}
		if blob != e.NewBlob {
			return errUnexplained
		}
	}
	want := ""
	if after != nil {
		want = hunks.BlobID(after.data)
	}
	if blob != want || known && after != nil && !bytes.Equal(cur.Data, after.data) {
		return errUnexplained
	}
	return nil
}
