package hunkscli

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/hunks"
)

type result struct {
	status         int
	stdout, stderr string
}

func run(args ...string) result {
	var stdout, stderr bytes.Buffer
	status := Main(args, &stdout, &stderr)
	return result{status, stdout.String(), stderr.String()}
}

func writeFile(t *testing.T, path, content string, mode fs.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	// WriteFile's mode is trimmed by the umask; tests want it exact.
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
	return path
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

const (
	oldText = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"
	newText = "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\nfifteen\n"
)

// inDir runs the test in a fresh directory, so relative names stay short.
func inDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	return dir
}

func TestDiffPatch(t *testing.T) {
	inDir(t)
	writeFile(t, "old.txt", oldText, 0o644)
	writeFile(t, "new.txt", newText, 0o644)
	got := run("diff", "old.txt", "new.txt")
	if got.status != 0 || got.stderr != "" {
		t.Fatalf("status %d, stderr %q", got.status, got.stderr)
	}
	want := "diff --git a/new.txt b/new.txt\n" +
		"index " + hunks.BlobID([]byte(oldText)) + ".." + hunks.BlobID([]byte(newText)) + "\n" +
		"--- a/new.txt\n+++ b/new.txt\n" +
		"@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n" +
		"@@ -12,4 +12,4 @@\n 12\n 13\n 14\n-15\n+fifteen\n"
	if got.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got.stdout, want)
	}
}

func TestDiffOptions(t *testing.T) {
	inDir(t)
	writeFile(t, "old.txt", oldText, 0o644)
	writeFile(t, "new.txt", newText, 0o644)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"one hunk", []string{"diff", "old.txt", "new.txt", "--hunks", "h2"},
			"diff --git a/new.txt b/new.txt\n--- a/new.txt\n+++ b/new.txt\n@@ -12,4 +12,4 @@\n 12\n 13\n 14\n-15\n+fifteen\n"},
		{"path before the files", []string{"diff", "--path", "src/x.txt", "--hunks=h1", "old.txt", "new.txt"},
			"diff --git a/src/x.txt b/src/x.txt\n--- a/src/x.txt\n+++ b/src/x.txt\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n"},
		{"created file", []string{"diff", "/dev/null", "new.txt", "--hunks", "h1"},
			"diff --git a/new.txt b/new.txt\nnew file mode 100644\nindex 0000000000000000000000000000000000000000.." + hunks.BlobID([]byte(newText)) + "\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,15 @@\n"},
		{"deleted file named after OLD", []string{"diff", "old.txt", "/dev/null"},
			"diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n"},
		{"same files", []string{"diff", "old.txt", "old.txt"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(tt.args...)
			if got.status != 0 {
				t.Fatalf("status %d: %s", got.status, got.stderr)
			}
			if !strings.HasPrefix(got.stdout, tt.want) || (tt.want == "" && got.stdout != "") {
				t.Errorf("stdout:\n%s\nwant it to start with:\n%s", got.stdout, tt.want)
			}
		})
	}
}

func TestDiffJSON(t *testing.T) {
	dir := t.TempDir()
	oldPath := writeFile(t, filepath.Join(dir, "old"), "a <b>\nsame\n", 0o644)
	newPath := writeFile(t, filepath.Join(dir, "new"), "a <c>\nsame\n", 0o644)
	got := run("diff", "--format", "json", oldPath, newPath)
	if got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	var e hunks.Edit
	if err := json.Unmarshal([]byte(got.stdout), &e); err != nil {
		t.Fatalf("%v in %s", err, got.stdout)
	}
	if e.Path != "new" || e.Added != 1 || e.Removed != 1 || len(e.Hunks) != 1 || e.Hunks[0].ID != "h1" {
		t.Errorf("decoded %+v", e)
	}
	if !strings.Contains(got.stdout, `"text": "a <c>"`) {
		t.Errorf("line text is escaped or missing:\n%s", got.stdout)
	}
}

func TestApply(t *testing.T) {
	dir := t.TempDir()
	oldPath := writeFile(t, filepath.Join(dir, "old"), oldText, 0o644)
	newPath := writeFile(t, filepath.Join(dir, "new"), newText, 0o644)
	file := writeFile(t, filepath.Join(dir, "file.sh"), "#!/bin/sh\n"+oldText, 0o750)

	got := run("apply", file, "--from", oldPath, "--to", newPath, "--accept", "h2")
	if got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	if want := file + ": applied h2\n"; got.stdout != want {
		t.Errorf("stdout %q, want %q", got.stdout, want)
	}
	if want := "#!/bin/sh\n" + strings.Replace(oldText, "15\n", "fifteen\n", 1); readFile(t, file) != want {
		t.Errorf("file:\n%s\nwant:\n%s", readFile(t, file), want)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o750 {
		t.Errorf("mode %v, want 0750 kept", info.Mode().Perm())
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Errorf("directory holds %d entries, want 3 (a temporary file was left?)", len(entries))
	}

	got = run("apply", file, "--from", oldPath, "--to", newPath, "--revert", "h2")
	if got.status != 0 || readFile(t, file) != "#!/bin/sh\n"+oldText {
		t.Errorf("revert: status %d, stderr %q, file %q", got.status, got.stderr, readFile(t, file))
	}
}

func TestApplyConflictLeavesFile(t *testing.T) {
	dir := t.TempDir()
	oldPath := writeFile(t, filepath.Join(dir, "old"), oldText, 0o644)
	newPath := writeFile(t, filepath.Join(dir, "new"), newText, 0o644)
	drifted := strings.Replace(oldText, "2\n", "two\n", 1)
	file := writeFile(t, filepath.Join(dir, "file"), drifted, 0o644)

	got := run("apply", file, "--from", oldPath, "--to", newPath, "--accept", "h1,h2")
	if got.status != 1 {
		t.Fatalf("status %d, want 1 for a conflict; stderr %q", got.status, got.stderr)
	}
	if !strings.Contains(got.stderr, "conflict") || !strings.Contains(got.stderr, "hunk h1") || !strings.Contains(got.stderr, "left as it was") {
		t.Errorf("stderr %q does not explain the conflict", got.stderr)
	}
	if readFile(t, file) != drifted {
		t.Error("a conflicting apply changed the file")
	}
}

func TestApplyCreatesAndDeletes(t *testing.T) {
	dir := t.TempDir()
	content := writeFile(t, filepath.Join(dir, "content"), "hello\n", 0o644)
	created := filepath.Join(dir, "sub", "dir", "created.txt")

	got := run("apply", created, "--from", "/dev/null", "--to", content, "--accept", "h1")
	if got.status != 0 || readFile(t, created) != "hello\n" {
		t.Fatalf("create: status %d, stderr %q", got.status, got.stderr)
	}
	if info, err := os.Stat(created); err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("created file: %v, %v", info, err)
	}
	got = run("apply", created, "--from", content, "--to", "/dev/null", "--accept", "h1")
	if got.status != 0 {
		t.Fatalf("delete: status %d, stderr %q", got.status, got.stderr)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("deleted file still there: %v", err)
	}
}

func TestApplyThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	oldPath := writeFile(t, filepath.Join(dir, "old"), oldText, 0o644)
	newPath := writeFile(t, filepath.Join(dir, "new"), newText, 0o644)
	target := writeFile(t, filepath.Join(dir, "target"), oldText, 0o644)
	link := filepath.Join(dir, "link")
	if err := os.Symlink("target", link); err != nil {
		t.Fatal(err)
	}
	got := run("apply", link, "--from", oldPath, "--to", newPath, "--accept", "h1,h2")
	if got.status != 0 {
		t.Fatalf("status %d: %s", got.status, got.stderr)
	}
	if readFile(t, target) != newText {
		t.Error("the link's target was not updated")
	}
	if info, err := os.Lstat(link); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("the link was replaced: %v, %v", info, err)
	}
}

func TestApplyNoHunksChangesNothing(t *testing.T) {
	dir := t.TempDir()
	oldPath := writeFile(t, filepath.Join(dir, "old"), oldText, 0o644)
	newPath := writeFile(t, filepath.Join(dir, "new"), newText, 0o644)
	file := writeFile(t, filepath.Join(dir, "file"), "unrelated\n", 0o644)
	got := run("apply", file, "--from", oldPath, "--to", newPath, "--accept", "")
	if got.status != 0 || readFile(t, file) != "unrelated\n" || !strings.Contains(got.stdout, "nothing changed") {
		t.Errorf("status %d, stdout %q, stderr %q", got.status, got.stdout, got.stderr)
	}
}

func TestBadUsage(t *testing.T) {
	dir := t.TempDir()
	oldPath := writeFile(t, filepath.Join(dir, "old"), oldText, 0o644)
	newPath := writeFile(t, filepath.Join(dir, "new"), newText, 0o644)
	file := writeFile(t, filepath.Join(dir, "file"), oldText, 0o644)
	missing := filepath.Join(dir, "missing")
	tests := []struct {
		name   string
		args   []string
		stderr string
	}{
		{"no command", nil, "usage:"},
		{"unknown command", []string{"merge"}, `unknown command "merge"`},
		{"diff with one file", []string{"diff", oldPath}, "want OLD and NEW"},
		{"diff with three files", []string{"diff", oldPath, newPath, file}, "want OLD and NEW"},
		{"unknown format", []string{"diff", oldPath, newPath, "--format", "xml"}, `unknown format "xml"`},
		{"hunks with json", []string{"diff", oldPath, newPath, "--format", "json", "--hunks", "h1"}, "--hunks needs --format patch"},
		{"unknown flag", []string{"diff", "--color", oldPath, newPath}, "flag provided but not defined"},
		{"unreadable file", []string{"diff", missing, newPath}, "no such file"},
		{"two absent files", []string{"diff", "/dev/null", "/dev/null"}, "both versions are absent"},
		{"unknown hunk in diff", []string{"diff", oldPath, newPath, "--hunks", "h9"}, `unknown hunk "h9"`},
		{"apply without file", []string{"apply", "--from", oldPath, "--to", newPath, "--accept", "h1"}, "want one FILE"},
		{"apply without --to", []string{"apply", file, "--from", oldPath, "--accept", "h1"}, "--from and --to are required"},
		{"apply without a choice", []string{"apply", file, "--from", oldPath, "--to", newPath}, "exactly one of --accept and --revert"},
		{"apply with both choices", []string{"apply", file, "--from", oldPath, "--to", newPath, "--accept", "h1", "--revert", "h2"}, "exactly one of --accept and --revert"},
		{"apply unknown hunk", []string{"apply", file, "--from", oldPath, "--to", newPath, "--accept", "h1,h7"}, `unknown hunk "h7"; the edit has hunks h1, h2`},
		{"apply onto a directory", []string{"apply", dir, "--from", oldPath, "--to", newPath, "--accept", "h1"}, "not a regular file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := run(tt.args...)
			if got.status != 2 {
				t.Errorf("status %d, want 2; stderr %q", got.status, got.stderr)
			}
			if !strings.Contains(got.stderr, tt.stderr) {
				t.Errorf("stderr %q lacks %q", got.stderr, tt.stderr)
			}
			if got.stdout != "" {
				t.Errorf("stdout %q, want nothing", got.stdout)
			}
		})
	}
	if readFile(t, file) != oldText {
		t.Error("a failed command changed the file")
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"--help"}, {"diff", "-h"}, {"apply", "--help"}} {
		if got := run(args...); got.status != 0 || !strings.Contains(got.stdout+got.stderr, "usage: hunks") {
			t.Errorf("%v: status %d, output %q", args, got.status, got.stdout+got.stderr)
		}
	}
}

func TestArgumentsAfterDoubleDash(t *testing.T) {
	inDir(t)
	writeFile(t, "-old", "a\n", 0o644)
	writeFile(t, "-new", "b\n", 0o644)
	got := run("diff", "--format", "patch", "--", "-old", "-new")
	if got.status != 0 || !strings.Contains(got.stdout, "-a\n+b\n") {
		t.Errorf("status %d, stdout %q, stderr %q", got.status, got.stdout, got.stderr)
	}
}
