package docexamples

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

func TestExtractReadsCommandsAndMarkers(t *testing.T) {
	cases := []struct {
		name string
		md   string
		want []Command
	}{
		{
			name: "every command of a sh block runs",
			md:   "text\n```sh\nbin/supervisor serve &   # state here\nid=$(bin/supervisor new)\n```\n",
			want: []Command{
				{Line: 3, Text: "bin/supervisor serve &", Background: true},
				{Line: 4, Text: "id=$(bin/supervisor new)"},
			},
		},
		{
			name: "a marker in a command's comment leaves that command out",
			md:   "```bash\nwatch $id   # live [not run: interactive]\nengines\n```\n",
			want: []Command{
				{Line: 2, Text: "watch $id", Skip: "interactive"},
				{Line: 3, Text: "engines"},
			},
		},
		{
			name: "a marker on a line of its own leaves out the rest of the block",
			md:   "```sh\nfirst\n# [not run: needs root]\nsecond\nthird\n```\n",
			want: []Command{
				{Line: 2, Text: "first"},
				{Line: 4, Text: "second", Skip: "needs root"},
				{Line: 5, Text: "third", Skip: "needs root"},
			},
		},
		{
			name: "a documented exit status",
			md:   "```sh\nsupervisor doctor   # says what to fix [exits 1: nothing is installed]\n```\n",
			want: []Command{{Line: 2, Text: "supervisor doctor", Exit: 1}},
		},
		{
			name: "a command over several lines",
			md:   "```sh\ncurl -N \\\n  http://corral/v1/events   # [not run: follows]\nfor i in 1 2; do\n  echo $i\ndone\n```\n",
			want: []Command{
				{Line: 2, Text: "curl -N \\\n\thttp://corral/v1/events", Skip: "follows"},
				{Line: 4, Text: "for i in 1 2; do\n\techo $i\ndone"},
			},
		},
		{
			name: "a console block's commands are its $ lines",
			md:   "```console\n$ supervisor engines\nENGINE READY\nscript yes\n$ supervisor health\n{\"ok\":true}\n```\n",
			want: []Command{
				{Line: 2, Text: "supervisor engines"},
				{Line: 5, Text: "supervisor health"},
			},
		},
		{
			name: "other blocks are not examples, an indented fence is",
			md:   "```json\n{\"a\": 1}\n```\n```\nsupervisor watch [ID] [--plain]\n```\n- item\n\n  ```sh\n  helm repo add x   # [not run: network]\n  ```\n",
			want: []Command{{Line: 10, Text: "helm repo add x", Skip: "network"}},
		},
		{
			name: "a longer fence holds a shorter one",
			md:   "````markdown\n```sh\nnot an example\n```\n````\n",
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := Extract("doc.md", tc.md)
			if err != nil {
				t.Fatal(err)
			}
			var got []Command
			for _, b := range blocks {
				got = append(got, b.Commands...)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("commands\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestExtractRefusesWhatWouldPassSilently(t *testing.T) {
	cases := []struct{ name, md, want string }{
		{"a marker without a reason", "```sh\nwatch   # [not run]\n```\n", "needs a reason"},
		{"an exit status that is not one", "```sh\nx   # [exits one]\n```\n", "exit status from 1 to 255"},
		{"exit status 0 written out", "```sh\nx   # [exits 0]\n```\n", "exit status from 1 to 255"},
		{"a marker after the last command", "```sh\nx\n# [not run: why]\n```\n", "marks nothing"},
		{"an exit status on a line of its own", "```sh\n# [exits 2]\nx\n```\n", "belongs in the comment"},
		{"a block that is not shell", "```sh\nif then fi (\n```\n", "not valid shell"},
		{"a block never closed", "```sh\nx\n", "not closed"},
		{"an untagged block with a prompt", "```\n$ supervisor engines\nENGINE READY\n```\n", "without an info string"},
		{"an untagged go test", "```\ngo test -race ./pkg/hunks/\n```\n", "without an info string"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Extract("doc.md", tc.md)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "doc.md:") {
				t.Fatalf("err %v does not name the document", err)
			}
		})
	}
}

// TestScriptStopsAtTheFirstWrongExitStatus runs a generated script in bash:
// a command that ends as documented (0, or its [exits N]) lets the next
// run; one that does not stops the script with StatusMismatch and names
// its line.
func TestScriptStopsAtTheFirstWrongExitStatus(t *testing.T) {
	bash := testenv.NeedProgram(t, "bash")
	cases := []struct {
		name       string
		md         string
		wantStatus int
		wantErr    string
		wantOut    string
	}{
		{"all as documented", "```sh\nx=hello\necho $x\nfalse   # [exits 1]\nsleep 30 &\n```\n", 0, "", "hello\n"},
		{"a failure the docs do not give", "```sh\necho one\nfalse\necho two\n```\n", StatusMismatch, "doc.md:3: exit status 1, the docs say 0", "one\n"},
		{"success where the docs give a failure", "```sh\ntrue   # [exits 3]\n```\n", StatusMismatch, "doc.md:2: exit status 0, the docs say 3", ""},
		{"a command not run", "```sh\nexit 5   # [not run: would end the script]\necho ran\n```\n", 0, "", "ran\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := Extract("doc.md", tc.md)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "s.sh")
			if err := os.WriteFile(path, []byte(Script("doc.md", Runnable(blocks))), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bash, "--noprofile", "--norc", path)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			status := 0
			if exit, ok := err.(*exec.ExitError); ok {
				status = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if status != tc.wantStatus || !strings.Contains(stderr.String(), tc.wantErr) || string(out) != tc.wantOut {
				t.Fatalf("status %d, stdout %q, stderr:\n%s\nwant status %d, stdout %q, stderr with %q",
					status, out, stderr.String(), tc.wantStatus, tc.wantOut, tc.wantErr)
			}
		})
	}
}

// FuzzExtract: any Markdown gives examples or an error, never a panic, and
// every command it returns starts on a line of the document.
func FuzzExtract(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "*.md"))
	for _, s := range seeds {
		raw, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(raw))
	}
	f.Add("```sh\nx # [not run: y]\n```\n")
	f.Add("```console\n$ a \\\n  b\nout\n```\n")
	f.Fuzz(func(t *testing.T, md string) {
		blocks, err := Extract("fuzz.md", md)
		if err != nil {
			return
		}
		lines := strings.Count(md, "\n") + 1
		for _, b := range blocks {
			for _, c := range b.Commands {
				if c.Line <= b.Line || c.Line > lines {
					t.Fatalf("command on line %d, block at %d, document of %d lines", c.Line, b.Line, lines)
				}
			}
		}
	})
}

func TestCheckGoTestsFindsNamesThatAreGone(t *testing.T) {
	root := t.TempDir()
	pkg := filepath.Join(root, "internal", "ring")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "package ring\n\nfunc TestRing(t *testing.T) {}\nfunc FuzzRing(f *testing.F) {}\nfunc BenchmarkRingWrite(b *testing.B) {}\n"
	if err := os.WriteFile(filepath.Join(pkg, "ring_test.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, block, want string }{
		{"names that exist", "go test -race ./internal/ring/\ngo test -run '^$' -fuzz FuzzRing -fuzztime 30s ./internal/ring/\ngo test -run Ring/sub -bench 'Write|Read' ./internal/ring/", ""},
		{"a fuzz target that moved", "go test -run '^$' -fuzz FuzzParse -fuzztime 30s ./internal/ring/", `-fuzz "FuzzParse" matches no Fuzz function`},
		{"a package that moved", "go test ./internal/term/", "not a package of the module"},
		{"a benchmark of a test binary built in the block", "go test -c -o ring.test ./internal/ring/\n./ring.test -test.run '^$' -test.bench Gone -test.benchtime 3x", `-bench "Gone" matches no Benchmark`},
		{"a test binary built elsewhere", "./other.test -test.bench Gone", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := Extract("doc.md", "```sh\n"+tc.block+"\n```\n")
			if err != nil {
				t.Fatal(err)
			}
			err = CheckGoTests(root, blocks[0].Commands)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
		})
	}
}
