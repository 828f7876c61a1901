package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

// completionScript returns the script for shell, generated with the same
// external commands cmd/supervisor adds.
func completionScript(t *testing.T, shell string) string {
	t.Helper()
	ext := []External{{Name: "gate"}, {Name: "hunks"}, {Name: "fakemodel"}}
	var out, errw bytes.Buffer
	if code := mainWith(strings.NewReader(""), []string{"completion", shell}, &out, &errw, ext...); code != 0 {
		t.Fatalf("completion %s: exit %d: %s", shell, code, errw.String())
	}
	path := filepath.Join(t.TempDir(), "supervisor."+shell)
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// fakeSupervisor puts on PATH a supervisor that answers `ls -q` with two
// session ids, as the scripts ask the real one.
func fakeSupervisor(t *testing.T) []string {
	dir := t.TempDir()
	script := "#!/bin/sh\n[ \"$1 $2\" = \"ls -q\" ] && printf '3f2a9c0d1e4b\\n9b0d4f11a2c3\\n'\n"
	if err := os.WriteFile(filepath.Join(dir, "supervisor"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

var completionCases = []struct {
	line string // the command line, completed at its end
	want []string
}{
	{"supervisor sen", []string{"send"}},
	{"supervisor wa", []string{"wait", "watch"}},
	{"supervisor hun", []string{"hunk", "hunks"}},
	{"supervisor new --engine co", []string{"codex", "copilot"}},
	{"supervisor wait 3f2a9c0d1e4b --for ", []string{"human", "idle", "turnEnd"}},
	{"supervisor goal ", []string{"3f2a9c0d1e4b", "9b0d4f11a2c3"}},
	{"supervisor goal 3f2a9c0d1e4b ", []string{"clear", "done", "get", "set"}},
	{"supervisor mode --state /tmp/s 3f2a9c0d1e4b ", []string{"auto", "readonly", "review"}},
	{"supervisor answer 3f2a9c0d1e4b a5 ", []string{"allow", "deny"}},
	{"supervisor creds set ", []string{"anthropic-api-key", "github-token", "openai-api-key"}},
	{"supervisor completion ", []string{"bash", "fish", "zsh"}},
	{"supervisor schema --format ", []string{"jsonschema", "openapi", "typescript"}},
	{"supervisor help ver", []string{"version"}},
	{"supervisor engines --ch", []string{"--check-accepted"}},
}

// words splits a command line as the shells do, keeping an empty last
// word when it ends in a space.
func lineWords(line string) []string {
	w := strings.Fields(line)
	if strings.HasSuffix(line, " ") {
		w = append(w, "")
	}
	return w
}

func sortedLines(out string) []string {
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			got = append(got, l)
		}
	}
	slices.Sort(got)
	return slices.Compact(got)
}

// caseMark separates the answers of the cases one shell process runs.
const caseMark = "--- next case ---"

// runCases runs one shell with the program of each case in turn, printing
// caseMark after each, and returns each case's candidates.
func runCases(t *testing.T, shell string, args []string, env []string, setup string, progs []string) [][]string {
	t.Helper()
	var all strings.Builder
	all.WriteString(setup + "\n")
	for _, p := range progs {
		all.WriteString(p + "\necho '" + caseMark + "'\n")
	}
	cmd := exec.Command(shell, append(args, all.String())...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v: %s", shell, err, out)
	}
	parts := strings.Split(string(out), caseMark+"\n")
	if len(parts) != len(progs)+1 {
		t.Fatalf("%s answered %d cases, want %d:\n%s", shell, len(parts)-1, len(progs), out)
	}
	res := make([][]string, len(progs))
	for i := range progs {
		res[i] = sortedLines(parts[i])
	}
	return res
}

func quoteWords(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = "'" + w + "'"
	}
	return strings.Join(quoted, " ")
}

// The bash script, in bash: COMP_WORDS and COMP_CWORD as bash's
// completion sets them, then the function complete -F names.
func TestBashCompletion(t *testing.T) {
	bash := testenv.NeedProgram(t, "bash")
	script := completionScript(t, "bash")
	cases := append(slices.Clone(completionCases), struct {
		line string
		want []string
	}{"supervisor new --engine=co", []string{"codex", "copilot"}})
	var progs []string
	for _, tc := range cases {
		// bash's COMP_WORDBREAKS splits --flag=value into three words.
		var words []string
		for _, w := range lineWords(tc.line) {
			if name, value, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
				words = append(words, name, "=", value)
				continue
			}
			words = append(words, w)
		}
		progs = append(progs, "COMP_WORDS=("+quoteWords(words)+"); COMP_CWORD="+strconv.Itoa(len(words)-1)+
			"; COMPREPLY=(); _supervisor; printf '%s\\n' \"${COMPREPLY[@]}\"")
	}
	got := runCases(t, bash, []string{"--norc", "--noprofile", "-c"}, fakeSupervisor(t),
		"source "+script+"; complete -p supervisor >/dev/null || exit 3", progs)
	for i, tc := range cases {
		if !slices.Equal(got[i], tc.want) {
			t.Errorf("bash %q: %v, want %v", tc.line, got[i], tc.want)
		}
	}
}

// The zsh script, in zsh: the completion system's bashcompinit runs the
// function through its compgen -F, and compadd keeps the candidates that
// start with the word being completed, as here.
func TestZshCompletion(t *testing.T) {
	zsh := testenv.NeedProgram(t, "zsh")
	script := completionScript(t, "zsh")
	var progs []string
	for _, tc := range completionCases {
		words := lineWords(tc.line)
		progs = append(progs, "COMP_WORDS=("+quoteWords(words)+"); COMP_CWORD="+strconv.Itoa(len(words)-1)+
			"; compgen -F _supervisor -- '"+words[len(words)-1]+"'")
	}
	got := runCases(t, zsh, []string{"-f", "-c"}, append(fakeSupervisor(t), "ZDOTDIR="+t.TempDir()),
		"autoload -U compinit && compinit -u -D; source "+script, progs)
	for i, tc := range completionCases {
		words := lineWords(tc.line)
		var kept []string
		for _, c := range got[i] {
			if strings.HasPrefix(c, words[len(words)-1]) {
				kept = append(kept, c)
			}
		}
		if !slices.Equal(kept, tc.want) {
			t.Errorf("zsh %q: %v, want %v", tc.line, kept, tc.want)
		}
	}
}

// The fish script, in fish: complete -C asks fish's own completion for a
// command line.
func TestFishCompletion(t *testing.T) {
	fish := testenv.NeedProgram(t, "fish")
	script := completionScript(t, "fish")
	var progs []string
	for _, tc := range completionCases {
		progs = append(progs, "complete -C '"+tc.line+"'")
	}
	got := runCases(t, fish, []string{"--no-config", "-c"}, append(fakeSupervisor(t), "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir()),
		"source "+script, progs)
	for i, tc := range completionCases {
		var words []string
		for _, l := range got[i] {
			word, _, _ := strings.Cut(l, "\t") // a candidate, then its description
			words = append(words, word)
		}
		if !slices.Equal(words, tc.want) {
			t.Errorf("fish %q: %v, want %v", tc.line, words, tc.want)
		}
	}
}

// Every script offers every command, and every command's flags.
func TestCompletionCoversEveryCommand(t *testing.T) {
	table := completionTable(commands(), nil)
	for _, shell := range []string{"bash", "zsh", "fish"} {
		raw, err := os.ReadFile(completionScript(t, shell))
		if err != nil {
			t.Fatal(err)
		}
		script := string(raw)
		for _, c := range table {
			if !strings.Contains(script, c.name) {
				t.Errorf("%s: no command %s", shell, c.name)
			}
			for _, f := range append(slices.Clone(c.valueFlags), c.boolFlags...) {
				want := f + " " // bash and zsh list --name, space-separated
				if shell == "fish" {
					want = fishFlag(f)
				}
				if !strings.Contains(strings.ReplaceAll(script, `"`, " "), want) {
					t.Errorf("%s: %s's flag %s is missing", shell, c.name, f)
				}
			}
		}
	}
	// --json is every command's.
	for _, c := range table {
		if !slices.Contains(c.boolFlags, "--json") {
			t.Errorf("%s takes no --json", c.name)
		}
	}
}
