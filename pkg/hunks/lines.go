package hunks

import (
	"bytes"
	"strconv"
	"strings"
)

// splitLines cuts data after every '\n'. Each line keeps its terminator, so
// the lines concatenate back to data exactly; only the last line may lack
// one. An empty file has no lines.
func splitLines(data []byte) [][]byte {
	if len(data) == 0 {
		return nil
	}
	lines := make([][]byte, 0, bytes.Count(data, []byte{'\n'})+1)
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, data)
			break
		}
		lines = append(lines, data[:i+1:i+1])
		data = data[i+1:]
	}
	return lines
}

// newLine splits raw, one line with its terminator, into a Line.
func newLine(op Op, raw []byte) Line {
	switch {
	case bytes.HasSuffix(raw, []byte("\r\n")):
		return Line{Op: op, Text: string(raw[:len(raw)-2]), EOL: "\r\n"}
	case bytes.HasSuffix(raw, []byte("\n")):
		return Line{Op: op, Text: string(raw[:len(raw)-1]), EOL: "\n"}
	}
	return Line{Op: op, Text: string(raw)}
}

// images returns the hunk's lines as they read before (context and deleted
// lines) and after (context and added lines), each with its terminator.
func (h *Hunk) images() (before, after []string) {
	before = make([]string, 0, h.OldLines)
	after = make([]string, 0, h.NewLines)
	for _, l := range h.Lines {
		full := l.Text + l.EOL
		if l.Op != OpAdd {
			before = append(before, full)
		}
		if l.Op != OpDelete {
			after = append(after, full)
		}
	}
	return before, after
}

// trailingContext counts the context lines that end the hunk.
func (h *Hunk) trailingContext() int {
	n := 0
	for i := len(h.Lines) - 1; i >= 0 && h.Lines[i].Op == OpContext; i-- {
		n++
	}
	return n
}

// formatHeader writes a hunk header the way git does: a count of one is
// left out, and an empty range starts at the line before it.
func formatHeader(oldStart, oldLines, newStart, newLines int) string {
	var b strings.Builder
	b.WriteString("@@ -")
	writeRange(&b, oldStart, oldLines)
	b.WriteString(" +")
	writeRange(&b, newStart, newLines)
	b.WriteString(" @@")
	return b.String()
}

func writeRange(b *strings.Builder, start, count int) {
	b.WriteString(strconv.Itoa(start))
	if count != 1 {
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(count))
	}
}

// rangeStart converts a 0-based first line index into git's header start.
func rangeStart(index, count int) int {
	if count == 0 {
		return index
	}
	return index + 1
}

// rangeIndex is the inverse of rangeStart: the 0-based index of the first
// line of a range, or of the line after the insertion point when empty.
func rangeIndex(start, count int) int {
	if count == 0 {
		return start
	}
	return start - 1
}
