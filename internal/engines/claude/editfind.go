package claude

import (
	"strings"
	"unicode"
	"unicode/utf16"
)

// Claude matches old_string against a file in JavaScript, on UTF-16 code
// units. The fallbacks below (curly quotes, \uXXXX escapes) change lengths in
// UTF-8 but not in code units, so they work on []uint16.

// Curly quotes Claude folds to straight ones when old_string is not found
// as written.
const (
	leftSingle  = '\u2018'
	rightSingle = '\u2019'
	leftDouble  = '\u201C'
	rightDouble = '\u201D'
)

// findActualString finds old in content the way Claude's Edit does and
// returns the text of content it matched.
func findActualString(content, old string) (string, bool) {
	if strings.Contains(content, old) {
		return old, true
	}
	cu, ou := units(content), units(old)
	if i := indexUnits(foldQuotes(cu), foldQuotes(ou)); i >= 0 {
		return str(cu[i : i+len(ou)]), true
	}
	if hasEscape(ou) {
		if plain := unescape(ou); !equalUnits(plain, ou) && strings.Contains(content, str(plain)) {
			return str(plain), true
		}
	}
	if hasNonASCII(ou) {
		if escapedLen(ou) > len(cu) || !strings.Contains(content, `\u`) {
			return "", false
		}
		if m, ok := findEscaped(ou, cu); ok {
			return str(m), true
		}
	}
	return "", false
}

// quoteStyle carries the file's curly quotes into new when old only
// matched with its quotes folded.
func quoteStyle(old, actual, new string) string {
	if old == actual {
		return new
	}
	doubles := strings.ContainsRune(actual, leftDouble) || strings.ContainsRune(actual, rightDouble)
	singles := strings.ContainsRune(actual, leftSingle) || strings.ContainsRune(actual, rightSingle)
	out := new
	if doubles {
		out = curlyDoubles(out)
	}
	if singles {
		out = curlySingles(out)
	}
	return out
}

// opensQuote reports whether a quote at rs[i] opens: at the start, or after
// whitespace or an opening bracket or dash.
func opensQuote(rs []rune, i int) bool {
	if i == 0 {
		return true
	}
	switch rs[i-1] {
	case ' ', '\t', '\n', '\r', '(', '[', '{', '\u2014', '\u2013':
		return true
	}
	return false
}

func curlyDoubles(s string) string {
	rs := []rune(s)
	out := make([]rune, len(rs))
	for i, r := range rs {
		out[i] = r
		if r != '"' {
			continue
		}
		if opensQuote(rs, i) {
			out[i] = leftDouble
		} else {
			out[i] = rightDouble
		}
	}
	return string(out)
}

func curlySingles(s string) string {
	rs := []rune(s)
	out := make([]rune, len(rs))
	for i, r := range rs {
		out[i] = r
		if r != '\'' {
			continue
		}
		between := i > 0 && i < len(rs)-1 && unicode.IsLetter(rs[i-1]) && unicode.IsLetter(rs[i+1])
		switch {
		case between:
			out[i] = rightSingle // an apostrophe
		case opensQuote(rs, i):
			out[i] = leftSingle
		default:
			out[i] = rightSingle
		}
	}
	return string(out)
}

// escapeStyle carries the file's \uXXXX escapes into new when old matched
// through them, or unescapes new when old was written with escapes the file
// does not have.
func escapeStyle(old, actual, new string) string {
	if old == actual {
		return new
	}
	ou, au := units(old), units(actual)
	if hasNonASCII(ou) && escapedLen(ou) == len(au) {
		if _, ok := findEscaped(ou, au); ok {
			digits := map[uint16]string{}
			lower, upper := 0, 0
			c := 0
			for _, u := range ou {
				if u < 0x80 {
					c++
					continue
				}
				d := string(utf16.Decode(au[c+2 : c+6]))
				digits[u] = d
				for _, r := range d {
					switch {
					case r >= 'a' && r <= 'f':
						lower++
					case r >= 'A' && r <= 'F':
						upper++
					}
				}
				c += 6
			}
			var b strings.Builder
			for _, u := range units(new) {
				if u < 0x80 {
					b.WriteRune(rune(u))
					continue
				}
				d, ok := digits[u]
				if !ok {
					d = hex4(u, upper > lower)
				}
				b.WriteString(`\u` + d)
			}
			return b.String()
		}
	}
	if hasEscape(ou) && str(unescape(ou)) == actual {
		return str(unescape(units(new)))
	}
	return new
}

// findEscaped finds old in content where each non-ASCII code unit of old is
// written as a \uXXXX escape (hex digits in either case) that is not itself
// escaped. It returns the matched units if that text first occurs there.
func findEscaped(old, content []uint16) ([]uint16, bool) {
	if backslashesBefore(old, len(old))%2 == 1 {
		return nil, false
	}
	var checks []int // offsets in the match where a real backslash must start
	if len(old) > 0 && old[0] == '\\' {
		checks = append(checks, 0)
	}
	off := 0
	for _, u := range old {
		if u >= 0x80 {
			checks = append(checks, off)
			off += 6
		} else {
			off++
		}
	}
	for start := 0; start < len(content); start++ {
		end, ok := matchEscapedAt(old, content, start)
		if !ok {
			continue
		}
		clean := true
		for _, g := range checks {
			if backslashesBefore(content, start+g)%2 != 0 {
				clean = false
				break
			}
		}
		if !clean {
			continue
		}
		m := content[start:end]
		if indexUnits(content, m) != start {
			return nil, false
		}
		return m, true
	}
	return nil, false
}

func matchEscapedAt(old, content []uint16, start int) (int, bool) {
	p := start
	for _, u := range old {
		if u < 0x80 {
			if p >= len(content) || content[p] != u {
				return 0, false
			}
			p++
			continue
		}
		if p+6 > len(content) || content[p] != '\\' || content[p+1] != 'u' {
			return 0, false
		}
		for i, want := range hex4(u, false) {
			got := content[p+2+i]
			if got != uint16(want) && got != uint16(unicode.ToUpper(want)) {
				return 0, false
			}
		}
		p += 6
	}
	return p, true
}

// backslashesBefore counts the backslashes immediately before s[i].
func backslashesBefore(s []uint16, i int) int {
	n := 0
	for i-1-n >= 0 && s[i-1-n] == '\\' {
		n++
	}
	return n
}

// unescape decodes \uXXXX escapes, leaving escaped backslashes alone.
func unescape(s []uint16) []uint16 {
	out := make([]uint16, 0, len(s))
	for i := 0; i < len(s); {
		if s[i] == '\\' && i+1 < len(s) && s[i+1] == '\\' {
			out = append(out, s[i], s[i+1])
			i += 2
			continue
		}
		if v, ok := escapeAt(s, i); ok {
			out = append(out, v)
			i += 6
			continue
		}
		out = append(out, s[i])
		i++
	}
	return out
}

// escapeAt decodes a \uXXXX escape at s[i].
func escapeAt(s []uint16, i int) (uint16, bool) {
	if i+6 > len(s) || s[i] != '\\' || s[i+1] != 'u' {
		return 0, false
	}
	var v uint16
	for _, h := range s[i+2 : i+6] {
		var d uint16
		switch {
		case h >= '0' && h <= '9':
			d = h - '0'
		case h >= 'a' && h <= 'f':
			d = h - 'a' + 10
		case h >= 'A' && h <= 'F':
			d = h - 'A' + 10
		default:
			return 0, false
		}
		v = v<<4 | d
	}
	return v, true
}

func hasEscape(s []uint16) bool {
	for i := range s {
		if _, ok := escapeAt(s, i); ok {
			return true
		}
	}
	return false
}

func hasNonASCII(s []uint16) bool {
	for _, u := range s {
		if u >= 0x80 {
			return true
		}
	}
	return false
}

// escapedLen is the length of s with every non-ASCII unit escaped.
func escapedLen(s []uint16) int {
	n := len(s)
	for _, u := range s {
		if u >= 0x80 {
			n += 5
		}
	}
	return n
}

func foldQuotes(s []uint16) []uint16 {
	out := make([]uint16, len(s))
	for i, u := range s {
		switch u {
		case leftSingle, rightSingle:
			u = '\''
		case leftDouble, rightDouble:
			u = '"'
		}
		out[i] = u
	}
	return out
}

func indexUnits(s, sub []uint16) int {
	if len(sub) == 0 {
		return 0
	}
outer:
	for i := 0; i+len(sub) <= len(s); i++ {
		for j := range sub {
			if s[i+j] != sub[j] {
				continue outer
			}
		}
		return i
	}
	return -1
}

func equalUnits(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func units(s string) []uint16 { return utf16.Encode([]rune(s)) }
func str(u []uint16) string   { return string(utf16.Decode(u)) }
