package hunks_test

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/hunks"
)

func TestIsBinary(t *testing.T) {
	tests := []struct {
		name string
		data string
		want bool
	}{
		{"empty", "", false},
		{"ascii", "hello\n", false},
		{"unicode", "héllo 日本 🎉\n", false},
		{"NUL at the start", "\x00abc", true},
		{"NUL far in", strings.Repeat("a", 100_000) + "\x00", true},
		{"one invalid byte in ten", "caf\xe9 au l\n", false},
		{"two invalid bytes in ten", "caf\xe9 cr\xe8m\n", true},
		{"truncated rune counts as invalid", strings.Repeat("a", 8) + "\xe6\x97", true},
		{"high bytes", "\xff\xfe\xfd\xfc", true},
		{"control characters are text", "\x1b[31mred\x1b[0m\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := hunks.IsBinary([]byte(tt.data)); got != tt.want {
				t.Errorf("IsBinary(%q) = %v, want %v", short(tt.data), got, tt.want)
			}
		})
	}
}

func TestBlobID(t *testing.T) {
	// Values from git hash-object.
	for data, want := range map[string]string{
		"":        "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
		"hello\n": "ce013625030ba8dba906f756967f9e9ca394464a",
	} {
		if got := hunks.BlobID([]byte(data)); got != want {
			t.Errorf("BlobID(%q) = %s, want %s", data, got, want)
		}
	}
}

func TestBinaryEditIsOneHunk(t *testing.T) {
	old, new := text("text before\n"), text("now \x00 binary\n")
	e := mustDiff(t, old, new)
	if !e.Binary || len(e.Hunks) != 1 || e.Hunks[0].ID != "h1" || len(e.Hunks[0].Lines) != 0 {
		t.Fatalf("binary edit %+v, want one hunk h1 without lines", e)
	}
	if e.Added != 0 || e.Removed != 0 || e.Hunks[0].Header != "binary 12 → 13 bytes" {
		t.Errorf("+%d -%d header %q", e.Added, e.Removed, e.Hunks[0].Header)
	}
	got, err := e.Apply(old, []string{"h1"})
	if err != nil || !sameSnapshot(got, new) {
		t.Errorf("Apply = %s, %v", show(got), err)
	}
	back, err := e.Revert(new, []string{"h1"})
	if err != nil || !sameSnapshot(back, old) {
		t.Errorf("Revert = %s, %v", show(back), err)
	}
}

// The binary patch carries both versions; decoding it the way git does
// gives them back.
func TestBinaryPatchLiterals(t *testing.T) {
	old := bytes.Repeat([]byte("\x00\x01old"), 50)
	new := []byte("\x00" + strings.Repeat("new contents ", 100))
	e := mustDiff(t, hunks.Present(old), hunks.Present(new))
	patch, err := e.Patch()
	if err != nil {
		t.Fatal(err)
	}
	header := "diff --git a/f b/f\nindex " + e.OldBlob + ".." + e.NewBlob + "\nGIT binary patch\n"
	if !bytes.HasPrefix(patch, []byte(header)) {
		t.Fatalf("patch starts %q, want %q", patch[:min(len(patch), 200)], header)
	}
	literals, err := decodeLiterals(patch[len(header):])
	if err != nil {
		t.Fatal(err)
	}
	if len(literals) != 2 || !bytes.Equal(literals[0], new) || !bytes.Equal(literals[1], old) {
		t.Errorf("literals decode to %q, want the new then the old version", literals)
	}
}

// decodeLiterals reads "literal N" blocks of a GIT binary patch.
func decodeLiterals(body []byte) ([][]byte, error) {
	const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		size, ok := strings.CutPrefix(sc.Text(), "literal ")
		if !ok {
			return nil, fmt.Errorf("want a literal line, got %q", sc.Text())
		}
		want, err := strconv.Atoi(size)
		if err != nil {
			return nil, err
		}
		var deflated []byte
		for sc.Scan() && sc.Text() != "" {
			line := sc.Text()
			n := int(line[0]-'A') + 1
			if line[0] >= 'a' {
				n = int(line[0]-'a') + 27
			}
			var chunk []byte
			for i := 1; i+5 <= len(line); i += 5 {
				var v uint32
				for _, c := range line[i : i+5] {
					v = v*85 + uint32(strings.IndexRune(alphabet, c))
				}
				chunk = append(chunk, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
			}
			if len(chunk) < n || len(chunk)-n > 3 {
				return nil, fmt.Errorf("line %q decodes to %d bytes, says %d", line, len(chunk), n)
			}
			deflated = append(deflated, chunk[:n]...)
		}
		zr, err := zlib.NewReader(bytes.NewReader(deflated))
		if err != nil {
			return nil, err
		}
		data, err := io.ReadAll(zr)
		if err != nil {
			return nil, err
		}
		if len(data) != want {
			return nil, fmt.Errorf("literal of %d bytes inflates to %d", want, len(data))
		}
		out = append(out, data)
	}
	return out, sc.Err()
}
