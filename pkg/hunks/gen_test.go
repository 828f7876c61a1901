package hunks_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/corral-dev/corral/pkg/hunks"
)

// pair is a generated edit proposal: two versions of one file.
type pair struct {
	name     string
	old, new hunks.Snapshot
}

func (p pair) String() string {
	return fmt.Sprintf("%q: old %s, new %s", p.name, show(p.old), show(p.new))
}

// show prints a snapshot for a test failure, cut short when long.
func show(s hunks.Snapshot) string {
	if !s.Exists {
		return "absent"
	}
	if len(s.Data) > 400 {
		return fmt.Sprintf("%q…(%d bytes)", s.Data[:400], len(s.Data))
	}
	return fmt.Sprintf("%q", s.Data)
}

// A small vocabulary makes repeated lines, hence repeated contexts, likely.
var commonLines = []string{"", "}", "\t}", "return nil", "x", "y", "x = 1", "# note", "  ", "end"}

var unicodeLines = []string{"héllo wörld", "日本語のテキスト", "emoji 🎉✓", "Ωmega ∑", "ß\u200bzero-width", "مرحبا"}

func randomLine(r *rand.Rand) string {
	switch n := r.IntN(1000); {
	case n < 3:
		// A very long line, up to about 100 KB.
		return strings.Repeat(fmt.Sprintf("long%d ", r.IntN(10)), 300+r.IntN(3000))
	case n < 450:
		return commonLines[r.IntN(len(commonLines))]
	case n < 600:
		return unicodeLines[r.IntN(len(unicodeLines))]
	case n < 620:
		return "lone\rcarriage return"
	case n < 630:
		// Invalid UTF-8, rare enough that the file stays text.
		return "latin-1 caf\xe9"
	case n < 650:
		return "trailing space \t "
	default:
		return fmt.Sprintf("line %d of %s", r.IntN(1000), commonLines[r.IntN(len(commonLines))])
	}
}

type lineStyle int

const (
	styleLF lineStyle = iota
	styleCRLF
	styleMixed
)

func randomEOL(r *rand.Rand, style lineStyle) string {
	switch style {
	case styleCRLF:
		return "\r\n"
	case styleMixed:
		if r.IntN(2) == 0 {
			return "\r\n"
		}
	}
	return "\n"
}

// randomLines returns between 0 and a few hundred lines with endings.
func randomLines(r *rand.Rand, style lineStyle) []string {
	n := r.IntN(40)
	if r.IntN(10) == 0 {
		n = r.IntN(400)
	}
	lines := make([]string, n)
	for i := range lines {
		lines[i] = randomLine(r) + randomEOL(r, style)
	}
	return lines
}

// mutate applies a handful of random line edits.
func mutate(r *rand.Rand, lines []string, style lineStyle) []string {
	out := append([]string(nil), lines...)
	for range r.IntN(8) {
		pos := 0
		if len(out) > 0 {
			pos = r.IntN(len(out) + 1)
		}
		switch r.IntN(6) {
		case 0: // insert
			add := make([]string, 1+r.IntN(4))
			for i := range add {
				add[i] = randomLine(r) + randomEOL(r, style)
			}
			out = append(out[:pos], append(add, out[pos:]...)...)
		case 1: // delete
			end := min(pos+1+r.IntN(4), len(out))
			if pos < end {
				out = append(out[:pos], out[end:]...)
			}
		case 2: // replace
			if pos < len(out) {
				out[pos] = randomLine(r) + randomEOL(r, style)
			}
		case 3: // duplicate a block elsewhere, making contexts repeat
			if len(out) > 2 {
				from := r.IntN(len(out) - 1)
				block := append([]string(nil), out[from:min(from+3, len(out))]...)
				out = append(out[:pos], append(block, out[pos:]...)...)
			}
		case 4: // switch a line's ending
			if pos < len(out) {
				if line, crlf := strings.CutSuffix(out[pos], "\r\n"); crlf {
					out[pos] = line + "\n"
				} else {
					out[pos] = strings.TrimSuffix(out[pos], "\n") + "\r\n"
				}
			}
		case 5: // swap two lines
			if pos < len(out) {
				other := r.IntN(len(out))
				out[pos], out[other] = out[other], out[pos]
			}
		}
	}
	return out
}

// join concatenates lines, dropping the final newline when asked.
func join(lines []string, dropFinalNewline bool) []byte {
	b := []byte(strings.Join(lines, ""))
	if dropFinalNewline {
		b = bytes.TrimSuffix(b, []byte("\n"))
	}
	return b
}

var pathShapes = []string{
	"f%05d.txt",
	"f%05d.txt",
	"f%05d.txt",
	"dir %05d/with space.txt",
	"café-%05d.txt",
	"quo\"te-%05d",
	"tab\there-%05d",
	"back\\slash-%05d",
	"deep/er/f%05d.go",
}

// randomPair returns the k-th generated pair: random text with random
// edits, mixed with the edge cases (no final newline on either side, CRLF,
// mixed endings, empty, created, deleted, unchanged, binary).
func randomPair(r *rand.Rand, k int) pair {
	name := fmt.Sprintf(pathShapes[r.IntN(len(pathShapes))], k)
	style := lineStyle(r.IntN(3))
	oldLines := randomLines(r, style)
	newLines := mutate(r, oldLines, style)
	old := hunks.Present(join(oldLines, r.IntN(5) == 0))
	new := hunks.Present(join(newLines, r.IntN(5) == 0))
	switch r.IntN(40) {
	case 0:
		old = hunks.Snapshot{}
	case 1:
		new = hunks.Snapshot{}
	case 2:
		old = hunks.Present(nil)
	case 3:
		new = hunks.Present([]byte{})
	case 4:
		new = old
	case 5:
		old, new = hunks.Snapshot{}, hunks.Present(nil)
	case 6:
		old, new = hunks.Present(nil), hunks.Snapshot{}
	case 7: // binary on one side
		new = hunks.Present(append(append([]byte{}, new.Data...), 0, 1, 2, 0xff))
	case 8: // binary on both sides
		old = hunks.Present(append([]byte{0x89, 'P', 'N', 'G', 0}, old.Data...))
		new = hunks.Present(append([]byte{0x89, 'P', 'N', 'G', 0}, new.Data...))
	case 9: // binary created
		old, new = hunks.Snapshot{}, hunks.Present([]byte("\x00\x01binary"))
	case 10: // binary deleted
		old, new = hunks.Present([]byte("\x00\x01binary")), hunks.Snapshot{}
	}
	return pair{name: name, old: old, new: new}
}
