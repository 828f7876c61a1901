package watch

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// clean makes text from an event safe to print: a file or a command's
// output may hold escape sequences that would otherwise drive the terminal.
// Tabs become spaces (so widths are known), other control characters are
// shown in caret notation, and invalid UTF-8 becomes U+FFFD.
func clean(s string) string {
	if !needsCleaning(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '\t':
			b.WriteString("    ")
		case r < 0x20:
			b.WriteByte('^')
			b.WriteByte(byte(r) + '@')
		case r == 0x7f:
			b.WriteString("^?")
		case r >= 0x80 && r < 0xa0, r == '\u2028', r == '\u2029':
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func needsCleaning(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c >= 0x80 {
			if c < 0x80 {
				return true
			}
			// Non-ASCII: only invalid UTF-8 and C1 controls need work.
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' {
				return true
			}
			i += size - 1
		}
	}
	return false
}

// textLines splits a message into printable lines, without the blank lines
// that lead or trail it.
func textLines(s string) []string {
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	s = strings.TrimLeft(s, "\r\n")
	if s == "" {
		return nil
	}
	raw := strings.Split(s, "\n")
	out := make([]string, len(raw))
	for i, l := range raw {
		out[i] = clean(strings.TrimSuffix(l, "\r"))
	}
	return out
}

// firstLine is the first line of s, marked with "…" when more follows.
func firstLine(s string) string {
	lines := textLines(s)
	switch len(lines) {
	case 0:
		return ""
	case 1:
		return lines[0]
	}
	return lines[0] + " …"
}

// brief is the first line of s, cut to its first sentence when longer
// than limit runes, and to limit runes when still longer: messages written
// for the model can run long.
func brief(s string, limit int) string {
	line := strings.TrimSuffix(firstLine(s), " …")
	if utf8.RuneCountInString(line) <= limit {
		return line
	}
	if i := strings.Index(line, ". "); i > 0 && utf8.RuneCountInString(line[:i+1]) <= limit {
		return line[:i+1]
	}
	runes := []rune(line)
	return string(runes[:limit-1]) + "…"
}

// duration prints a duration the way the transcript shows it: "2 ms",
// "0.1s", "12s", "3m05s".
func duration(ms int64) string {
	switch {
	case ms < 0:
		return "0 ms"
	case ms < 100:
		return fmt.Sprintf("%d ms", ms)
	case ms < 10_000:
		return fmt.Sprintf("%.1fs", float64(ms)/1000)
	case ms < 60_000:
		return fmt.Sprintf("%ds", ms/1000)
	case ms < 3_600_000:
		return fmt.Sprintf("%dm%02ds", ms/60_000, ms/1000%60)
	}
	return fmt.Sprintf("%dh%02dm", ms/3_600_000, ms/60_000%60)
}

// elapsed prints how long something has run, in whole seconds, for the
// live spinner line.
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%ds", max(int64(d/time.Second), 0))
	}
	return duration(d.Milliseconds())
}

// tokens prints a token count: "999", "1.2k", "12k", "1.5M".
func tokens(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1_000_000)
}

// cost prints US dollars: four decimals below a dollar, where model calls
// usually are, two above.
func cost(usd float64) string {
	if usd < 1 {
		return fmt.Sprintf("$%.4f", usd)
	}
	return fmt.Sprintf("$%.2f", usd)
}

// plural is "1 file", "2 files".
func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// lineCounts is "+3 −1", as git and the example print them.
func lineCounts(added, removed int) string {
	return fmt.Sprintf("+%d −%d", added, removed)
}

// shortID is the prefix of a session id shown on every line when several
// sessions are watched.
func shortID(id string) string {
	if len(id) <= 4 {
		return id
	}
	return id[:4]
}
