package hunks

import (
	"bytes"
	"fmt"
	"strings"
)

// Patch returns the whole edit as a git-style unified diff that git apply
// accepts: a "diff --git" header, hunks with "\ No newline at end of file"
// markers where a version lacks its final newline, and for a binary file a
// "GIT binary patch" with both versions as zlib-deflated base85 literals.
// An edit without hunks gives an empty patch.
func (e *Edit) Patch() ([]byte, error) {
	picked, err := e.pick(e.IDs())
	if err != nil {
		return nil, err
	}
	return e.patch(picked)
}

// PatchHunks returns a unified diff holding only the named hunks, with the
// new-side line numbers renumbered as if the other hunks did not exist, so
// that git apply of it onto the old version gives what Apply gives. No ids
// give an empty patch.
func (e *Edit) PatchHunks(ids []string) ([]byte, error) {
	picked, err := e.pick(ids)
	if err != nil {
		return nil, err
	}
	return e.patch(picked)
}

// fileMode is the mode written for created and deleted files. Modified
// files carry no mode, so git apply keeps theirs.
const fileMode = "100644"

func (e *Edit) patch(picked []int) ([]byte, error) {
	if len(picked) == 0 {
		return nil, nil
	}
	whole := len(picked) == len(e.Hunks)
	var buf bytes.Buffer
	oldName, newName := quotePath("a/"+e.Path), quotePath("b/"+e.Path)
	fmt.Fprintf(&buf, "diff --git %s %s\n", oldName, newName)
	switch e.Kind {
	case KindCreate:
		oldName = "/dev/null"
		buf.WriteString("new file mode " + fileMode + "\n")
	case KindDelete:
		newName = "/dev/null"
		buf.WriteString("deleted file mode " + fileMode + "\n")
	}
	if whole {
		// Git needs full ids to apply a binary patch; for text they are
		// informative, and only true of the whole edit.
		fmt.Fprintf(&buf, "index %s..%s\n", orZero(e.OldBlob), orZero(e.NewBlob))
	}
	if e.Binary {
		if e.contents == nil {
			return nil, fmt.Errorf("%s: binary contents are not carried in JSON; patch the Edit that Diff returned", e.Path)
		}
		if err := writeBinaryPatch(&buf, e.contents.old, e.contents.new); err != nil {
			return nil, fmt.Errorf("%s: %w", e.Path, err)
		}
		return buf.Bytes(), nil
	}
	if e.Kind != KindModify && len(e.Hunks[picked[0]].Lines) == 0 {
		// An empty file is created or deleted by the header alone.
		return buf.Bytes(), nil
	}
	fmt.Fprintf(&buf, "--- %s%s\n", oldName, nameTab(oldName))
	fmt.Fprintf(&buf, "+++ %s%s\n", newName, nameTab(newName))
	delta := 0 // lines added minus lines removed by the hunks written so far
	for _, i := range picked {
		h := &e.Hunks[i]
		newStart := rangeStart(rangeIndex(h.OldStart, h.OldLines)+delta, h.NewLines)
		buf.WriteString(formatHeader(h.OldStart, h.OldLines, newStart, h.NewLines))
		buf.WriteByte('\n')
		for _, l := range h.Lines {
			buf.WriteByte(byte(l.Op))
			buf.WriteString(l.Text)
			if l.EOL == "" {
				buf.WriteString("\n\\ No newline at end of file\n")
				continue
			}
			buf.WriteString(l.EOL)
		}
		delta += h.NewLines - h.OldLines
	}
	return buf.Bytes(), nil
}

func orZero(id string) string {
	if id == "" {
		return zeroID
	}
	return id
}

// nameTab is the tab git puts after a ---/+++ name holding a space, so
// that the name is not mistaken for one followed by a timestamp.
func nameTab(name string) string {
	if strings.Contains(name, " ") {
		return "\t"
	}
	return ""
}

// quotePath quotes a path in patch headers the way git does by default: in
// double quotes with C escapes when it holds a quote, a backslash, a control
// character or a byte outside ASCII, and as is otherwise.
func quotePath(p string) string {
	if !strings.ContainsFunc(p, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 || r >= 0x7f }) {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
