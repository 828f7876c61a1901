package codex

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/pkg/engine"
)

// maxEditBytes bounds a file Corral reads to stage an edit.
const maxEditBytes = 32 << 20

// readFunc reads a file for staging: its bytes and whether it exists.
type readFunc func(path string) (data []byte, exists bool, err error)

// readCurrent reads path from disk.
func readCurrent(path string) ([]byte, bool, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%s is not a regular file", path)
	}
	if fi.Size() > maxEditBytes {
		return nil, false, fmt.Errorf("%s is larger than %d bytes", path, maxEditBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false, err
	}
	return data, true, nil
}

// proposals turns the changes of a Codex fileChange item into one
// EditProposal per file, with the file's current bytes and its bytes after
// the patch. Codex reports an added file's whole content, a deleted file's
// old content, and an updated file as unified-diff hunks (followed by
// "Moved to: <path>" for a rename). A rename becomes two proposals: the new
// file and the removal of the old one. cwd resolves relative paths.
func proposals(changes []fileUpdateChange, cwd string, read readFunc) ([]engine.EditProposal, error) {
	if len(changes) == 0 {
		return nil, errors.New("the patch changes no file")
	}
	var out []engine.EditProposal
	for _, ch := range changes {
		path := absPath(ch.Path, cwd)
		if path == "" {
			return nil, errors.New("the patch names a file with an empty path")
		}
		before, existed, err := read(path)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		switch ch.Kind.Type {
		case "add":
			out = append(out, engine.EditProposal{Path: path, Before: before, Existed: existed, After: []byte(ch.Diff)})
		case "delete":
			if !existed {
				return nil, fmt.Errorf("delete %s: the file does not exist", path)
			}
			if !bytes.Equal(before, []byte(ch.Diff)) {
				return nil, fmt.Errorf("delete %s: the file changed since the patch was made", path)
			}
			out = append(out, engine.EditProposal{Path: path, Before: before, Existed: true, Delete: true})
		case "update":
			if !existed {
				return nil, fmt.Errorf("update %s: the file does not exist", path)
			}
			diff := ch.Diff
			var dest string
			if ch.Kind.MovePath != nil && *ch.Kind.MovePath != "" {
				dest = absPath(*ch.Kind.MovePath, cwd)
				diff = strings.TrimSuffix(diff, "\n\nMoved to: "+*ch.Kind.MovePath)
			}
			after, err := applyUnifiedDiff(before, diff)
			if err != nil {
				return nil, fmt.Errorf("update %s: %w", path, err)
			}
			if dest == "" || dest == path {
				out = append(out, engine.EditProposal{Path: path, Before: before, Existed: true, After: after})
				continue
			}
			destBefore, destExisted, err := read(dest)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", dest, err)
			}
			out = append(out,
				engine.EditProposal{Path: dest, Before: destBefore, Existed: destExisted, After: after},
				engine.EditProposal{Path: path, Before: before, Existed: true, Delete: true})
		default:
			return nil, fmt.Errorf("%s: unknown change kind %q", path, ch.Kind.Type)
		}
	}
	return out, nil
}

func absPath(p, cwd string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	return filepath.Clean(p)
}

// hunkHeader is a parsed "@@ -a,b +c,d @@" line.
type hunkHeader struct {
	oldStart, oldLines, newStart, newLines int
}

func parseHunkHeader(line string) (hunkHeader, error) {
	rest, ok := strings.CutPrefix(line, "@@ -")
	if !ok {
		return hunkHeader{}, fmt.Errorf("bad hunk header %q", line)
	}
	end := strings.Index(rest, " @@")
	if end < 0 {
		return hunkHeader{}, fmt.Errorf("bad hunk header %q", line)
	}
	oldPart, newPart, ok := strings.Cut(rest[:end], " +")
	if !ok {
		return hunkHeader{}, fmt.Errorf("bad hunk header %q", line)
	}
	var h hunkHeader
	var err error
	if h.oldStart, h.oldLines, err = parseRange(oldPart); err != nil {
		return hunkHeader{}, fmt.Errorf("bad hunk header %q: %w", line, err)
	}
	if h.newStart, h.newLines, err = parseRange(newPart); err != nil {
		return hunkHeader{}, fmt.Errorf("bad hunk header %q: %w", line, err)
	}
	return h, nil
}

func parseRange(s string) (start, count int, err error) {
	a, b, hasCount := strings.Cut(s, ",")
	start, err = strconv.Atoi(a)
	if err != nil || start < 0 {
		return 0, 0, fmt.Errorf("bad line number %q", a)
	}
	count = 1
	if hasCount {
		count, err = strconv.Atoi(b)
		if err != nil || count < 0 {
			return 0, 0, fmt.Errorf("bad line count %q", b)
		}
	}
	return start, count, nil
}

// splitLines splits data into lines that keep their "\n".
func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i+1])
		data = data[i+1:]
	}
	return lines
}

// noNewline is the marker a unified diff puts after a line that has no
// newline at the end of the file.
const noNewline = `\ No newline at end of file`

// applyUnifiedDiff applies the hunks of diff (no file headers) to before,
// exactly: every context and removed line must match byte for byte, line
// counts must agree with the hunk headers, and hunks must come in order. An
// empty diff leaves the content as it is.
func applyUnifiedDiff(before []byte, diff string) ([]byte, error) {
	old := splitLines(before)
	dl := strings.Split(diff, "\n")
	// The diff's own final newline leaves an empty last element.
	if n := len(dl); n > 0 && dl[n-1] == "" {
		dl = dl[:n-1]
	}
	var out []byte
	pos := 0 // next unconsumed line of old
	i := 0
	for i < len(dl) {
		h, err := parseHunkHeader(dl[i])
		if err != nil {
			return nil, err
		}
		i++
		start := h.oldStart - 1
		if h.oldLines == 0 {
			start = h.oldStart // an insertion goes after line oldStart
		}
		if start < pos || start > len(old) {
			return nil, fmt.Errorf("hunk at line %d is out of order or past the end of the file", h.oldStart)
		}
		for _, l := range old[pos:start] {
			out = append(out, l...)
		}
		pos = start
		oldSeen, newSeen := 0, 0
		for i < len(dl) && (oldSeen < h.oldLines || newSeen < h.newLines || dl[i] == noNewline) {
			line := dl[i]
			i++
			if line == noNewline {
				// Already applied to the line before it.
				if i < 2 || strings.HasPrefix(dl[i-2], "@@") || dl[i-2] == noNewline {
					return nil, errors.New("misplaced no-newline marker")
				}
				continue
			}
			op, text := byte(' '), ""
			if line != "" {
				op, text = line[0], line[1:]
			}
			// Each line ends with a newline unless the next diff line is
			// the no-newline marker.
			want := []byte(text + "\n")
			if i < len(dl) && dl[i] == noNewline {
				want = want[:len(want)-1]
			}
			switch op {
			case ' ', '-':
				if pos >= len(old) || !bytes.Equal(old[pos], want) {
					return nil, fmt.Errorf("line %d does not match the patch: the file changed since the patch was made", pos+1)
				}
				oldSeen++
				pos++
				if op == ' ' {
					out = append(out, want...)
					newSeen++
				}
			case '+':
				out = append(out, want...)
				newSeen++
			default:
				return nil, fmt.Errorf("unexpected line %q in hunk", line)
			}
		}
		if oldSeen != h.oldLines || newSeen != h.newLines {
			return nil, fmt.Errorf("hunk at line %d has %d old and %d new lines, its header says %d and %d", h.oldStart, oldSeen, newSeen, h.oldLines, h.newLines)
		}
	}
	for _, l := range old[pos:] {
		out = append(out, l...)
	}
	return out, nil
}

// writeProposal carries out an allowed edit that Codex itself will not
// write because the patch it belonged to was declined as a whole. The write
// stays inside the worktree and follows no link (atomicfile.WriteBeneath):
// the file may have changed since the edit was judged.
func writeProposal(worktree string, p engine.EditProposal) error {
	if p.Delete {
		return atomicfile.RemoveBeneath(worktree, p.Path)
	}
	mode := fs.FileMode(0o644)
	if fi, err := os.Lstat(p.Path); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	return atomicfile.WriteBeneath(worktree, p.Path, p.After, mode, false)
}
