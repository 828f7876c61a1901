package hunks

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ErrConflict matches every *ConflictError with errors.Is.
var ErrConflict = errors.New("conflict")

// Reason says why a hunk could not be placed.
type Reason string

const (
	// ReasonFileMissing: the hunk changes a file that no longer exists.
	ReasonFileMissing Reason = "file does not exist"
	// ReasonFileExists: the hunk creates a file that exists already.
	ReasonFileExists Reason = "file already exists"
	// ReasonNotFound: the hunk's context and removed lines are nowhere in
	// the part of the file where the hunk could go.
	ReasonNotFound Reason = "context not found"
	// ReasonAmbiguous: the file has drifted and the hunk's context and
	// removed lines occur more than once where the hunk could go.
	ReasonAmbiguous Reason = "context is ambiguous"
	// ReasonChanged: a binary file is not the version the edit was made
	// against.
	ReasonChanged Reason = "binary file has changed"
)

// ConflictError reports a hunk that cannot be applied (or reverted) onto
// the file as it is. Nothing is written when one is returned.
type ConflictError struct {
	Path   string
	Hunk   string // the hunk's id
	Header string // the hunk's header, for people
	Reason Reason
	// Line is where, in the current file, the hunk was looked for first
	// (1-based), or 0 when Reason is about the whole file.
	Line int
	// Matches lists the 1-based lines at which an ambiguous hunk matched,
	// up to a handful.
	Matches []int
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "conflict: %s: hunk %s", e.Path, e.Hunk)
	if e.Header != "" {
		fmt.Fprintf(&b, " (%s)", e.Header)
	}
	fmt.Fprintf(&b, ": %s", e.Reason)
	switch {
	case len(e.Matches) > 0:
		b.WriteString(" at lines")
		for i, m := range e.Matches {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, " %d", m)
		}
	case e.Line > 0:
		fmt.Fprintf(&b, " near line %d", e.Line)
	}
	return b.String()
}

// Is makes errors.Is(err, ErrConflict) true.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// maxReportedMatches caps ConflictError.Matches.
const maxReportedMatches = 5

// Apply returns current with the hunks named by ids applied, in file order;
// the other hunks are left out. current is the file as it is now: when it
// is still the edit's old version (same git blob id) every hunk goes at its
// recorded line; otherwise each hunk's context and removed lines must occur
// exactly once after the previous hunk, with a hunk that starts at line 1
// kept at the top and one without trailing context kept at the end, as git
// apply does. A hunk that cannot be placed makes Apply return a
// *ConflictError and no result. With no ids, current is returned as is.
func (e *Edit) Apply(current Snapshot, ids []string) (Snapshot, error) {
	return e.transform(current, ids, false)
}

// Revert returns current with the hunks named by ids taken back out: each
// hunk's added lines are replaced by the lines it removed. It is Apply for
// the reversed edit, recognising the undrifted file by the new version's
// blob id.
func (e *Edit) Revert(current Snapshot, ids []string) (Snapshot, error) {
	return e.transform(current, ids, true)
}

func (e *Edit) transform(current Snapshot, ids []string, reverse bool) (Snapshot, error) {
	picked, err := e.pick(ids)
	if err != nil {
		return Snapshot{}, err
	}
	if len(picked) == 0 {
		return current, nil
	}
	fromExists, toExists := e.Kind != KindCreate, e.Kind != KindDelete
	base := e.OldBlob
	if reverse {
		fromExists, toExists = toExists, fromExists
		base = e.NewBlob
	}
	first := &e.Hunks[picked[0]]
	if fromExists && !current.Exists {
		return Snapshot{}, e.conflict(first, ReasonFileMissing, 0)
	}
	if !fromExists && current.Exists {
		return Snapshot{}, e.conflict(first, ReasonFileExists, 0)
	}
	if e.Binary {
		return e.transformBinary(current, reverse)
	}

	lines := splitLines(current.Data)
	undrifted := current.Exists && base != "" && BlobID(current.Data) == base
	var out bytes.Buffer
	out.Grow(len(current.Data))
	consumed := 0 // lines of current already copied or replaced
	shift := 0    // how far the last placed hunk sat from its recorded line
	for _, i := range picked {
		h := &e.Hunks[i]
		before, after := h.images()
		start, count := h.OldStart, h.OldLines
		if reverse {
			before, after = after, before
			start, count = h.NewStart, h.NewLines
		}
		m := matcher{
			lines:     lines,
			image:     before,
			from:      consumed,
			atStart:   start <= 1,
			atEnd:     h.trailingContext() == 0,
			undrifted: undrifted,
		}
		recorded := rangeIndex(start, count)
		pos, matches := m.place(recorded + shift)
		switch {
		case len(matches) == 0:
			return Snapshot{}, e.conflict(h, ReasonNotFound, min(max(recorded+shift, 0), len(lines))+1)
		case len(matches) > 1:
			c := e.conflict(h, ReasonAmbiguous, 0)
			for _, p := range matches {
				c.Matches = append(c.Matches, p+1)
			}
			return Snapshot{}, c
		}
		for _, line := range lines[consumed:pos] {
			out.Write(line)
		}
		for _, line := range after {
			out.WriteString(line)
		}
		consumed = pos + len(before)
		shift = pos - recorded
	}
	for _, line := range lines[consumed:] {
		out.Write(line)
	}
	if !toExists {
		// The deleting hunk is anchored at both ends, so it matched the
		// whole file and left nothing behind.
		if out.Len() != 0 {
			return Snapshot{}, fmt.Errorf("%s: %w: deleting the file leaves %d bytes", e.Path, ErrInvalidEdit, out.Len())
		}
		return Snapshot{}, nil
	}
	return Present(out.Bytes()), nil
}

func (e *Edit) transformBinary(current Snapshot, reverse bool) (Snapshot, error) {
	if e.contents == nil {
		return Snapshot{}, fmt.Errorf("%s: binary contents are not carried in JSON; apply the Edit that Diff returned", e.Path)
	}
	from, to := e.contents.old, e.contents.new
	if reverse {
		from, to = to, from
	}
	// transform has checked that current exists exactly when from does.
	if current.Exists && !bytes.Equal(current.Data, from) {
		return Snapshot{}, e.conflict(&e.Hunks[0], ReasonChanged, 0)
	}
	if to == nil {
		return Snapshot{}, nil
	}
	return Present(bytes.Clone(to)), nil
}

func (e *Edit) conflict(h *Hunk, reason Reason, line int) *ConflictError {
	return &ConflictError{Path: e.Path, Hunk: h.ID, Header: h.Header, Reason: reason, Line: line}
}

// matcher finds where a hunk's image (the lines it expects) sits in lines.
type matcher struct {
	lines     [][]byte
	image     []string
	from      int  // first line the image may start at
	atStart   bool // the image must start at line 0
	atEnd     bool // the image must end at the last line
	undrifted bool // lines are the version the hunk was made against
}

// place returns the position of the image. An undrifted file is trusted
// to hold it at the expected position. Otherwise the image must occur
// exactly once: matches lists every position found (up to a few), and pos
// is meaningful only when there is exactly one.
func (m *matcher) place(expected int) (pos int, matches []int) {
	if m.undrifted && m.fits(expected) {
		return expected, []int{expected}
	}
	first, last := m.from, len(m.lines)-len(m.image)
	if m.atStart {
		last = min(last, 0)
	}
	if m.atEnd {
		first = max(first, len(m.lines)-len(m.image))
	}
	for p := first; p <= last && len(matches) < maxReportedMatches; p++ {
		if m.fits(p) {
			matches = append(matches, p)
		}
	}
	if len(matches) == 1 {
		return matches[0], matches
	}
	return -1, matches
}

func (m *matcher) fits(p int) bool {
	if p < m.from || p > len(m.lines)-len(m.image) {
		return false
	}
	if (m.atStart && p != 0) || (m.atEnd && p+len(m.image) != len(m.lines)) {
		return false
	}
	for k, want := range m.image {
		if string(m.lines[p+k]) != want {
			return false
		}
	}
	return true
}
