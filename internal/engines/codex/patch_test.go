package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/engine"
)

func TestApplyUnifiedDiffIsExact(t *testing.T) {
	cases := []struct {
		name, before, diff, after string
	}{
		// The hunks below are what codex-cli 0.169 reports in fileChange
		// items (recorded against the pinned CLI).
		{"one line changed", "one\ntwo\nthree\n", "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n", "one\nTWO\nthree\n"},
		{"two hunks", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n@@ -8,3 +8,3 @@\n h\n-i\n+I\n j\n", "a\nB\nc\nd\ne\nf\ng\nh\nI\nj\n"},
		{"adds a final newline", "first\nlast", "@@ -1,2 +1,2 @@\n first\n-last\n\\ No newline at end of file\n+LAST\n", "first\nLAST\n"},
		{"keeps no final newline", "first\nlast", "@@ -1,2 +1,2 @@\n first\n-last\n\\ No newline at end of file\n+LAST\n\\ No newline at end of file\n", "first\nLAST"},
		{"context without final newline", "x\ny", "@@ -1,2 +1,3 @@\n+w\n x\n y\n\\ No newline at end of file\n", "w\nx\ny"},
		{"insertion after a line", "a\nb\n", "@@ -1,0 +2,1 @@\n+inserted\n", "a\ninserted\nb\n"},
		{"insertion at the top", "a\n", "@@ -0,0 +1,1 @@\n+top\n", "top\na\n"},
		{"counts omitted", "a\nb\n", "@@ -2 +2 @@\n-b\n+c\n", "a\nc\n"},
		{"crlf kept", "a\r\nb\r\n", "@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n", "a\r\nc\r\n"},
		{"empty context line", "a\n\nb\n", "@@ -1,3 +1,3 @@\n a\n \n-b\n+c\n", "a\n\nc\n"},
		{"bare empty context line", "a\n\nb\n", "@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n", "a\n\nc\n"},
		{"no hunks", "same\n", "", "same\n"},
		{"everything removed", "gone\n", "@@ -1 +0,0 @@\n-gone\n", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyUnifiedDiff([]byte(tc.before), tc.diff)
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if string(got) != tc.after {
				t.Errorf("got %q, want %q", got, tc.after)
			}
		})
	}
}

func TestApplyUnifiedDiffRefusesWhatDoesNotFit(t *testing.T) {
	cases := []struct {
		name, before, diff, wantErr string
	}{
		{"changed context", "one\nTWO\n", "@@ -1,2 +1,2 @@\n one\n-two\n+2\n", "changed since"},
		{"missing final newline in file", "a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+c\n", "changed since"},
		{"past the end", "a\n", "@@ -5,1 +5,1 @@\n-x\n+y\n", "past the end"},
		{"out of order", "a\nb\nc\n", "@@ -2,1 +2,1 @@\n-b\n+B\n@@ -1,1 +1,1 @@\n-a\n+A\n", "out of order"},
		{"short hunk", "a\nb\n", "@@ -1,2 +1,2 @@\n-a\n+A\n", "header says"},
		{"bad header", "a\n", "@@ nonsense @@\n-a\n", "bad hunk header"},
		{"file header instead of hunk", "a\n", "--- a/x\n+++ b/x\n", "bad hunk header"},
		{"unknown line", "a\n", "@@ -1,1 +1,1 @@\n*a\n", "unexpected line"},
		{"marker first", "a\n", "@@ -1,1 +1,1 @@\n\\ No newline at end of file\n-a\n+b\n", "misplaced"},
		{"negative count", "a\n", "@@ -1,-1 +1,1 @@\n", "bad line count"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := applyUnifiedDiff([]byte(tc.before), tc.diff)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func FuzzApplyUnifiedDiff(f *testing.F) {
	f.Add([]byte("a\nb\n"), "@@ -1,2 +1,2 @@\n a\n-b\n+c\n")
	f.Add([]byte("first\nlast"), "@@ -1,2 +1,2 @@\n first\n-last\n\\ No newline at end of file\n+LAST\n")
	f.Fuzz(func(t *testing.T, before []byte, diff string) {
		after, err := applyUnifiedDiff(before, diff)
		if err != nil {
			return
		}
		if diff == "" && string(after) != string(before) {
			t.Fatalf("an empty diff changed the file")
		}
	})
}

func TestProposalsFromFileChanges(t *testing.T) {
	dir := t.TempDir()
	p := func(name string) string { return filepath.Join(dir, name) }
	writeFile(t, p("f.txt"), "one\ntwo\nthree\n")
	writeFile(t, p("d.txt"), "gone\n")
	writeFile(t, p("m.txt"), "x\nkeep\n")
	move := p("m2.txt")
	// Exactly the changes codex-cli 0.169 reported for one patch.
	changes := []fileUpdateChange{
		{Path: p("d.txt"), Kind: patchChangeKind{Type: "delete"}, Diff: "gone\n"},
		{Path: p("f.txt"), Kind: patchChangeKind{Type: "update"}, Diff: "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n"},
		{Path: p("m.txt"), Kind: patchChangeKind{Type: "update", MovePath: &move}, Diff: "@@ -1,2 +1,2 @@\n-x\n+y\n keep\n\n\nMoved to: " + move},
		{Path: "new.txt", Kind: patchChangeKind{Type: "add"}, Diff: "brand\nnew\n"},
	}
	got, err := proposals(changes, dir, readCurrent)
	if err != nil {
		t.Fatal(err)
	}
	want := []engine.EditProposal{
		{Path: p("d.txt"), Before: []byte("gone\n"), Existed: true, Delete: true},
		{Path: p("f.txt"), Before: []byte("one\ntwo\nthree\n"), Existed: true, After: []byte("one\nTWO\nthree\n")},
		{Path: move, After: []byte("y\nkeep\n")},
		{Path: p("m.txt"), Before: []byte("x\nkeep\n"), Existed: true, Delete: true},
		{Path: p("new.txt"), After: []byte("brand\nnew\n")},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d proposals: %+v", len(got), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Path != w.Path || string(g.Before) != string(w.Before) || g.Existed != w.Existed || string(g.After) != string(w.After) || g.Delete != w.Delete {
			t.Errorf("proposal %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func TestProposalsRefuseStaleChanges(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "d.txt"), "edited meanwhile\n")
	cases := map[string]fileUpdateChange{
		"delete of a changed file": {Path: filepath.Join(dir, "d.txt"), Kind: patchChangeKind{Type: "delete"}, Diff: "gone\n"},
		"delete of a missing file": {Path: filepath.Join(dir, "none.txt"), Kind: patchChangeKind{Type: "delete"}, Diff: "x\n"},
		"update of a missing file": {Path: filepath.Join(dir, "none.txt"), Kind: patchChangeKind{Type: "update"}, Diff: "@@ -1 +1 @@\n-a\n+b\n"},
		"update that does not fit": {Path: filepath.Join(dir, "d.txt"), Kind: patchChangeKind{Type: "update"}, Diff: "@@ -1 +1 @@\n-gone\n+x\n"},
		"unknown kind":             {Path: filepath.Join(dir, "d.txt"), Kind: patchChangeKind{Type: "chmod"}},
		"empty path":               {Kind: patchChangeKind{Type: "add"}},
	}
	for name, ch := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := proposals([]fileUpdateChange{ch}, dir, readCurrent); err == nil {
				t.Fatal("want an error")
			}
		})
	}
	if _, err := proposals(nil, dir, readCurrent); err == nil {
		t.Error("an empty patch was accepted")
	}
}

func TestWriteProposal(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "sub", "new.txt")
	if err := writeProposal(dir, engine.EditProposal{Path: target, After: []byte("x\n")}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, target, "x\n")
	if err := os.Chmod(target, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeProposal(dir, engine.EditProposal{Path: target, Existed: true, After: []byte("y\n")}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(target); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the file's own 0600 kept", fi.Mode().Perm())
	}
	if err := writeProposal(dir, engine.EditProposal{Path: target, Existed: true, Delete: true}); err != nil {
		t.Fatal(err)
	}
	checkFile(t, target, "")
}
