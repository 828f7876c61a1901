package hunks_test

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/hunks"
)

// text is shorthand for an existing file's snapshot.
func text(s string) hunks.Snapshot { return hunks.Present([]byte(s)) }

var indexLine = regexp.MustCompile(`(?m)^index [0-9a-f]{40}\.\.[0-9a-f]{40}\n`)

// patchWithoutIndex renders the whole edit without its "index" line, whose
// blob ids are checked separately.
func patchWithoutIndex(t *testing.T, e *hunks.Edit) string {
	t.Helper()
	p, err := e.Patch()
	if err != nil {
		t.Fatalf("Patch: %v", err)
	}
	return indexLine.ReplaceAllString(string(p), "")
}

func TestDiffEdgeCases(t *testing.T) {
	long := strings.Repeat("0123456789", 100_000) // a 1 MB line
	tests := []struct {
		name             string
		old, new         hunks.Snapshot
		kind             hunks.Kind
		headers          []string
		added, removed   int
		patch            string // without the index line
		patchHasNoHeader bool
	}{
		{
			name: "one changed line",
			old:  text("a\nb\nc\n"), new: text("a\nB\nc\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,3 +1,3 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
		},
		{
			name: "final newline added",
			old:  text("a\nb"), new: text("a\nb\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,2 +1,2 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n",
		},
		{
			name: "final newline removed",
			old:  text("a\nb\n"), new: text("a\nb"),
			kind: hunks.KindModify, headers: []string{"@@ -1,2 +1,2 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n",
		},
		{
			name: "neither side ends in a newline",
			old:  text("a\nb"), new: text("a\nc"),
			kind: hunks.KindModify, headers: []string{"@@ -1,2 +1,2 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
		},
		{
			name: "unchanged last line without newline as context",
			old:  text("a\nb\nc"), new: text("A\nb\nc"),
			kind: hunks.KindModify, headers: []string{"@@ -1,3 +1,3 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+A\n b\n c\n\\ No newline at end of file\n",
		},
		{
			name: "CRLF kept",
			old:  text("a\r\nb\r\nc\r\n"), new: text("a\r\nB\r\nc\r\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,3 +1,3 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\r\n-b\r\n+B\r\n c\r\n",
		},
		{
			name: "only a line ending changes",
			old:  text("a\nb\nc\n"), new: text("a\nb\r\nc\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,3 +1,3 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+b\r\n c\n",
		},
		{
			name: "mixed endings and a lone CR",
			old:  text("a\r\nb\nc\rd\n"), new: text("a\r\nb\nc\rD\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,3 +1,3 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\r\n b\n-c\rd\n+c\rD\n",
		},
		{
			name: "created",
			old:  hunks.Snapshot{}, new: text("x\ny\n"),
			kind: hunks.KindCreate, headers: []string{"@@ -0,0 +1,2 @@"}, added: 2,
			patch: "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n@@ -0,0 +1,2 @@\n+x\n+y\n",
		},
		{
			name: "created without final newline",
			old:  hunks.Snapshot{}, new: text("x"),
			kind: hunks.KindCreate, headers: []string{"@@ -0,0 +1 @@"}, added: 1,
			patch: "diff --git a/f b/f\nnew file mode 100644\n--- /dev/null\n+++ b/f\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n",
		},
		{
			name: "deleted",
			old:  text("x\ny\n"), new: hunks.Snapshot{},
			kind: hunks.KindDelete, headers: []string{"@@ -1,2 +0,0 @@"}, removed: 2,
			patch: "diff --git a/f b/f\ndeleted file mode 100644\n--- a/f\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n",
		},
		{
			name: "empty file created",
			old:  hunks.Snapshot{}, new: text(""),
			kind: hunks.KindCreate, headers: []string{"@@ -0,0 +0,0 @@"},
			patch: "diff --git a/f b/f\nnew file mode 100644\n",
		},
		{
			name: "empty file deleted",
			old:  text(""), new: hunks.Snapshot{},
			kind: hunks.KindDelete, headers: []string{"@@ -0,0 +0,0 @@"},
			patch: "diff --git a/f b/f\ndeleted file mode 100644\n",
		},
		{
			name: "empty file filled",
			old:  text(""), new: text("a\n"),
			kind: hunks.KindModify, headers: []string{"@@ -0,0 +1 @@"}, added: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+a\n",
		},
		{
			name: "file emptied",
			old:  text("a\n"), new: text(""),
			kind: hunks.KindModify, headers: []string{"@@ -1 +0,0 @@"}, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-a\n",
		},
		{
			name: "line inserted at the top",
			old:  text("b\nc\nd\ne\n"), new: text("a\nb\nc\nd\ne\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,3 +1,4 @@"}, added: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,4 @@\n+a\n b\n c\n d\n",
		},
		{
			name: "unicode",
			old:  text("héllo\n日本\n"), new: text("héllo wörld 🎉\n日本\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,2 +1,2 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-héllo\n+héllo wörld 🎉\n 日本\n",
		},
		{
			name: "changes six lines apart share a hunk",
			old:  text("1\n2\n3\n4\n5\n6\n7\n8\n"), new: text("X\n2\n3\n4\n5\n6\n7\nY\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,8 +1,8 @@"}, added: 2, removed: 2,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,8 +1,8 @@\n-1\n+X\n 2\n 3\n 4\n 5\n 6\n 7\n-8\n+Y\n",
		},
		{
			name: "changes seven lines apart get two hunks",
			old:  text("1\n2\n3\n4\n5\n6\n7\n8\n9\n"), new: text("X\n2\n3\n4\n5\n6\n7\n8\nY\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,4 +1,4 @@", "@@ -6,4 +6,4 @@"}, added: 2, removed: 2,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,4 +1,4 @@\n-1\n+X\n 2\n 3\n 4\n@@ -6,4 +6,4 @@\n 6\n 7\n 8\n-9\n+Y\n",
		},
		{
			name: "second hunk's new start follows the first hunk's growth",
			old:  text("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"), new: text("1\nnew\nnew\n2\n3\n4\n5\n6\n7\n8\n9\nten\n"),
			kind: hunks.KindModify, headers: []string{"@@ -1,4 +1,6 @@", "@@ -7,4 +9,4 @@"}, added: 3, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,4 +1,6 @@\n 1\n+new\n+new\n 2\n 3\n 4\n@@ -7,4 +9,4 @@\n 7\n 8\n 9\n-10\n+ten\n",
		},
		{
			name: "unchanged",
			old:  text("same\n"), new: text("same\n"),
			kind: hunks.KindModify,
		},
		{
			name: "one very long line",
			old:  text(long), new: text(long[:500_000] + "X" + long[500_001:]),
			kind: hunks.KindModify, headers: []string{"@@ -1 +1 @@"}, added: 1, removed: 1,
			patch: "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-" + long + "\n\\ No newline at end of file\n+" +
				long[:500_000] + "X" + long[500_001:] + "\n\\ No newline at end of file\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := hunks.Diff("f", tt.old, tt.new)
			if err != nil {
				t.Fatal(err)
			}
			if e.Kind != tt.kind || e.Binary {
				t.Errorf("kind %q binary %v, want %q text", e.Kind, e.Binary, tt.kind)
			}
			var headers []string
			for i, h := range e.Hunks {
				headers = append(headers, h.Header)
				if want := "h" + string(rune('1'+i)); h.ID != want {
					t.Errorf("hunk %d has id %q, want %q", i, h.ID, want)
				}
			}
			if !slices.Equal(headers, tt.headers) {
				t.Errorf("headers %q, want %q", headers, tt.headers)
			}
			if e.Added != tt.added || e.Removed != tt.removed {
				t.Errorf("+%d -%d, want +%d -%d", e.Added, e.Removed, tt.added, tt.removed)
			}
			if got := patchWithoutIndex(t, e); got != tt.patch {
				t.Errorf("patch:\n%s\nwant:\n%s", short(got), short(tt.patch))
			}
			if err := e.Validate(); err != nil {
				t.Errorf("Validate: %v", err)
			}
			if got, err := e.Apply(tt.old, e.IDs()); err != nil || !sameSnapshot(got, tt.new) {
				t.Errorf("Apply(old, all) = %s, %v; want the new version", show(got), err)
			}
		})
	}
}

func short(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

func TestDiffRecordsSizesAndBlobIDs(t *testing.T) {
	const helloBlob = "ce013625030ba8dba906f756967f9e9ca394464a" // git hash-object of "hello\n"
	const emptyBlob = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
	e, err := hunks.Diff("f", text(""), text("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if e.OldBlob != emptyBlob || e.NewBlob != helloBlob || e.OldSize != 0 || e.NewSize != 6 {
		t.Errorf("blobs %s..%s sizes %d..%d", e.OldBlob, e.NewBlob, e.OldSize, e.NewSize)
	}
	p, err := e.Patch()
	if err != nil {
		t.Fatal(err)
	}
	if want := "index " + emptyBlob + ".." + helloBlob + "\n"; !strings.Contains(string(p), want) {
		t.Errorf("patch lacks %q:\n%s", want, p)
	}
	created, err := hunks.Diff("f", hunks.Snapshot{}, text("hello\n"))
	if err != nil {
		t.Fatal(err)
	}
	if created.OldBlob != "" || created.OldSize != 0 {
		t.Errorf("an absent version has blob %q size %d", created.OldBlob, created.OldSize)
	}
}

func TestDiffRejectsBadInput(t *testing.T) {
	if _, err := hunks.Diff("", text("a"), text("b")); err == nil {
		t.Error("an empty path was accepted")
	}
	if _, err := hunks.Diff("f", hunks.Snapshot{}, hunks.Snapshot{}); err == nil {
		t.Error("two absent versions were accepted")
	}
}

func TestDiffDoesNotKeepCallerBuffers(t *testing.T) {
	old, new := []byte("a\nb\n"), []byte("a\nc\n")
	e, err := hunks.Diff("f", hunks.Present(old), hunks.Present(new))
	if err != nil {
		t.Fatal(err)
	}
	copy(old, "XXXX")
	copy(new, "YYYY")
	got, err := e.Apply(text("a\nb\n"), e.IDs())
	if err != nil || string(got.Data) != "a\nc\n" {
		t.Errorf("Apply after the caller reused its buffers = %s, %v", show(got), err)
	}
}

// A timeout that has always passed makes the diff coarse, never wrong.
func TestDiffTimeoutStaysExact(t *testing.T) {
	var old, new bytes.Buffer
	for i := range 3000 {
		old.WriteString(strings.Repeat("x", i%7) + "\n")
		if i%5 != 0 {
			new.WriteString(strings.Repeat("x", i%11) + "\n")
		}
	}
	for _, timeout := range []time.Duration{time.Nanosecond, -1} {
		e, err := hunks.Options{Timeout: timeout}.Diff("f", hunks.Present(old.Bytes()), hunks.Present(new.Bytes()))
		if err != nil {
			t.Fatal(err)
		}
		if got, err := e.Apply(hunks.Present(old.Bytes()), e.IDs()); err != nil || !bytes.Equal(got.Data, new.Bytes()) {
			t.Errorf("timeout %v: Apply(old, all) differs from new: %v", timeout, err)
		}
	}
}

// The hunks are the same however many times the same pair is diffed.
func TestDiffIsDeterministic(t *testing.T) {
	old, new := text("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\n"), text("a\nB\nc\nd\ne\nf\ng\nh\ni\nJ\nk\nl\n")
	first, err := hunks.Diff("f", old, new)
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := hunks.Diff("f", old, new)
		if err != nil {
			t.Fatal(err)
		}
		p1, _ := first.Patch()
		p2, _ := again.Patch()
		if !bytes.Equal(p1, p2) || !slices.Equal(first.IDs(), again.IDs()) {
			t.Fatalf("diffs differ:\n%s\n%s", p1, p2)
		}
	}
}

// Shared lines around a change can align more than one way; context comes
// from the whole file whichever way the diff aligns them.
func TestDiffRepeatedLinesAtTheEdges(t *testing.T) {
	tests := []struct{ old, new string }{
		{"A\nB\nC\nD\n", "A\nB\nC\nA\nB\nC\nD\n"},
		{"A\nB\nC\nD\n", "A\nA\nB\nC\nD\n"},
		{"A\nB\nC\nD\n", "A\nB\nC\nD\nA\nB\nC\nD\n"},
		{"x\nx\nx\nx\nx\n", "x\nx\nx\nx\nx\nx\nx\n"},
		{"x\nx\nx\nx\nx\n", "x\nx\n"},
		{"p\nA\nB\nA\nB\nq", "p\nA\nB\nA\nB\nA\nB\nq"},
	}
	for _, tt := range tests {
		e := mustDiff(t, text(tt.old), text(tt.new))
		got, err := e.Apply(text(tt.old), e.IDs())
		if err != nil || string(got.Data) != tt.new {
			p, _ := e.Patch()
			t.Errorf("%q -> %q: Apply(old, all) = %s, %v\n%s", tt.old, tt.new, show(got), err, p)
		}
	}
}
