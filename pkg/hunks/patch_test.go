package hunks_test

import (
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/hunks"
)

func TestPatchQuotesPathsLikeGit(t *testing.T) {
	tests := []struct {
		path   string
		header string
		minus  string
	}{
		{"plain/file.go", "diff --git a/plain/file.go b/plain/file.go", "--- a/plain/file.go\n"},
		{"with space.txt", "diff --git a/with space.txt b/with space.txt", "--- a/with space.txt\t\n"},
		{"café.txt", `diff --git "a/caf\303\251.txt" "b/caf\303\251.txt"`, "--- \"a/caf\\303\\251.txt\"\n"},
		{"quo\"te", `diff --git "a/quo\"te" "b/quo\"te"`, "--- \"a/quo\\\"te\"\n"},
		{"tab\tand\\back", `diff --git "a/tab\tand\\back" "b/tab\tand\\back"`, "--- \"a/tab\\tand\\\\back\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			e, err := hunks.Diff(tt.path, text("a\n"), text("b\n"))
			if err != nil {
				t.Fatal(err)
			}
			p, err := e.Patch()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(string(p), tt.header+"\n") || !strings.Contains(string(p), tt.minus) {
				t.Errorf("patch:\n%s\nwant header %s and %q", p, tt.header, tt.minus)
			}
		})
	}
}

// A subset patch numbers its new side as if the left-out hunks were never
// there, and carries no index line, which would describe the whole edit.
func TestPatchHunksRenumbers(t *testing.T) {
	old := numbered(30, nil)
	new := numbered(30, map[int]string{2: "2\nadded\nadded\n", 20: "twenty\n", 28: ""})
	e := mustDiff(t, text(old), text(new))
	var headers []string
	for _, h := range e.Hunks {
		headers = append(headers, h.Header)
	}
	if got := strings.Join(headers, " "); got != "@@ -1,5 +1,7 @@ @@ -17,7 +19,7 @@ @@ -25,6 +27,5 @@" {
		t.Fatalf("headers %s", got)
	}
	tests := []struct {
		ids  []string
		want string
	}{
		{[]string{"h2"}, "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -17,7 +17,7 @@\n 17\n 18\n 19\n-20\n+twenty\n 21\n 22\n 23\n"},
		{[]string{"h1", "h3"}, "diff --git a/f b/f\n--- a/f\n+++ b/f\n" +
			"@@ -1,5 +1,7 @@\n 1\n 2\n+added\n+added\n 3\n 4\n 5\n" +
			"@@ -25,6 +27,5 @@\n 25\n 26\n 27\n-28\n 29\n 30\n"},
		{[]string{"h3"}, "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -25,6 +25,5 @@\n 25\n 26\n 27\n-28\n 29\n 30\n"},
		{nil, ""},
	}
	for _, tt := range tests {
		got, err := e.PatchHunks(tt.ids)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tt.want {
			t.Errorf("PatchHunks(%v):\n%s\nwant:\n%s", tt.ids, got, tt.want)
		}
	}
}

func TestPatchWithoutChangesIsEmpty(t *testing.T) {
	p, err := mustDiff(t, text("same\n"), text("same\n")).Patch()
	if err != nil || len(p) != 0 {
		t.Errorf("Patch = %q, %v; want empty", p, err)
	}
}
