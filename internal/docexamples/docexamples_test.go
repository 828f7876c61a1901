package docexamples_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/docexamples"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testsupervisor"
)

// docTimeout bounds one document's examples; they take a few seconds.
const docTimeout = 5 * time.Minute

// TestDocExamples runs every shell example of README.md and docs/*.md as
// written, in a fresh home and state folder, with the built supervisor and
// runner in bin/ and on PATH. A document whose examples do not start a
// supervisor themselves get one started as the README says
// (`supervisor serve &`) before its first example.
func TestDocExamples(t *testing.T) {
	root, err := testenv.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append([]string{filepath.Join(root, "README.md")}, docs...)
	bash := testenv.NeedProgram(t, "bash")
	testenv.NeedProgram(t, "curl") // docs/api.md's examples
	var supervisorBin string
	for _, path := range docs {
		name, _ := filepath.Rel(root, path)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := docexamples.Extract(name, string(src))
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		for _, b := range blocks {
			if err := docexamples.CheckGoTests(root, b.Commands); err != nil {
				t.Errorf("%s: %v", name, err)
			}
		}
		cmds := docexamples.Runnable(blocks)
		if len(cmds) == 0 {
			continue
		}
		if supervisorBin == "" {
			supervisorBin, _ = testsupervisor.Binaries(t)
		}
		t.Run(name, func(t *testing.T) {
			runDoc(t, bash, root, filepath.Dir(supervisorBin), name, cmds)
		})
	}
}

var startsSupervisor = regexp.MustCompile(`(^|/|\s)supervisor serve\b`)

// runDoc runs one document's examples.
func runDoc(t *testing.T, bash, root, binDir, name string, cmds []docexamples.Command) {
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	work := filepath.Join(tmp, "work")
	state := filepath.Join(home, ".local", "state", "corral")
	for _, dir := range []string{home, work} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// The folder a reader runs the examples from: a clone's root, with its
	// README and the binaries make build leaves in bin/.
	if err := os.Symlink(binDir, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "README.md"), readme, 0o600); err != nil {
		t.Fatal(err)
	}

	script := docexamples.Script(name, cmds)
	if !anyMatch(cmds, startsSupervisor) {
		script = "supervisor serve 2>" + filepath.Join(tmp, "serve.log") + " &\n" +
			"__bg0=$!\n" +
			"supervisor health --wait 60s >/dev/null || { echo 'the supervisor did not start' >&2; cat " + filepath.Join(tmp, "serve.log") + " >&2; exit 96; }\n" +
			"trap 'kill -TERM $__bg0; wait $__bg0' EXIT\n" +
			"( " + strings.ReplaceAll(script, "\n", "\n  ") + "\n)\n"
	}
	scriptPath := filepath.Join(tmp, "examples.sh")
	if err := os.WriteFile(scriptPath, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), docTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "--noprofile", "--norc", scriptPath)
	cmd.Dir = work
	cmd.Env = docEnv(home, state, binDir, tmp)
	cmd.Stdin = nil
	proc.ConfigureContext(cmd, 10*time.Second)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	// Whatever the examples started in the background is gone with them,
	// and so are the runners a stopped supervisor leaves with work under
	// way (they wait for its return, in their own process groups).
	proc.KillGroup(cmd.Process.Pid)
	testsupervisor.StopRunners(filepath.Join(binDir, "runner"), tmp)
	if err != nil {
		var exit *exec.ExitError
		why := err.Error()
		if errors.As(err, &exit) && exit.ExitCode() == docexamples.StatusMismatch {
			why = "an example ended with another exit status than its document gives"
		}
		if ctx.Err() != nil {
			why = "the examples did not finish within " + docTimeout.String()
		}
		t.Errorf("%s: %s\n--- stderr (each example starts with ===):\n%s\n--- stdout:\n%s\n--- script:\n%s",
			name, why, stderr.String(), stdout.String(), script)
	}
}

func anyMatch(cmds []docexamples.Command, re *regexp.Regexp) bool {
	for _, c := range cmds {
		if re.MatchString(c.Text) {
			return true
		}
	}
	return false
}

// docEnv is a reader's shell on a fresh machine: their own home and state
// folder, the binaries on PATH, none of this process's Corral settings (not
// even the engines folder make exports: a reader's shell has none, and a
// first probe of the Copilot CLI would unpack 235 MB into the fresh home).
func docEnv(home, state, binDir, tmp string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CORRAL_") || strings.HasPrefix(k, "XDG_") ||
			k == "HOME" || k == "PATH" || k == "TMPDIR" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home,
		"CORRAL_STATE="+state,
		"TMPDIR="+tmp,
		"PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"),
	)
}
