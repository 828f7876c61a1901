// Package testenv decides what a test does when something it needs from
// outside the Go toolchain is missing: an agent CLI, git, tmux, npm, a
// browser. Outside CI the test is skipped with the reason, so a developer
// without, say, tmux can still run the rest; in CI (CI=true) the test
// fails with the same reason, so nothing is silently skipped there.
//
// Everything the tests need is installed by `make deps`, which every
// message names.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/corral-dev/corral/internal/locate"
)

// EnvCI is the variable CI systems set (to "true") on their runs.
const EnvCI = "CI"

// InCI reports whether the tests run in CI: CI is set to a true value
// ("true", "1"...). Unset, empty or false means a developer's machine.
func InCI() bool {
	v, ok := os.LookupEnv(EnvCI)
	if !ok || v == "" {
		return false
	}
	b, err := strconv.ParseBool(v)
	// A CI system that sets CI to something else than a boolean still
	// counts as CI: failing loudly is the safe side.
	return err != nil || b
}

// Missing ends the test because what it needs is missing: t.Skip with the
// reason outside CI, t.Fatal with it in CI. why says what was looked for
// and what was found.
func Missing(t testing.TB, what, why string) {
	t.Helper()
	msg := fmt.Sprintf("%s is needed by this test and is missing (%s); `make deps` installs it", what, why)
	if InCI() {
		t.Fatalf("%s [CI=%s: a test never skips for a missing program in CI]", msg, os.Getenv(EnvCI))
	}
	t.Skip("skipped: " + msg)
}

// NeedRoot ends the test unless it runs as root: t.Skip outside CI,
// t.Fatal in CI, which runs as root. why says what needs root.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if InCI() {
		t.Fatalf("%s, which needs root [CI=%s: CI runs as root]", why, os.Getenv(EnvCI))
	}
	t.Skip("skipped: " + why + ", which needs root")
}

// NeedCgroup2 ends the test unless this process may make cgroups (v2) in
// its own: usable is what cgroup.Check returned (nil when it may). Outside
// CI the test is skipped with the reason; CI runs as root on a host with
// cgroup v2 mounted, so there it fails.
func NeedCgroup2(t testing.TB, usable error) {
	t.Helper()
	if usable == nil {
		return
	}
	if InCI() {
		t.Fatalf("cgroup v2 is needed by this test and cannot be used: %v [CI=%s: CI runs as root with cgroup v2 mounted]", usable, os.Getenv(EnvCI))
	}
	t.Skip("skipped: cgroup v2 is needed by this test and cannot be used: " + usable.Error())
}

// NeedProgram returns the path of the program name found on PATH, or ends
// the test through Missing.
func NeedProgram(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "the program "+name, err.Error())
	}
	return p
}

// NeedGit returns the path of git.
func NeedGit(t testing.TB) string { t.Helper(); return NeedProgram(t, "git") }

// NeedTmux returns the path of tmux.
func NeedTmux(t testing.TB) string { t.Helper(); return NeedProgram(t, "tmux") }

// NeedGo returns the path of the go command, for tests that build the
// project's binaries.
func NeedGo(t testing.TB) string { t.Helper(); return NeedProgram(t, "go") }

// NeedEngineCLI checks that the project's pinned install of the agent CLI
// bin ("claude", "codex", "copilot"...) is present, and returns the
// engines folder to hand an engine as its locate.KeyEnginesDir. Only the
// pinned install counts: a CLI of another version on PATH would make the
// test check something else than what Corral supports. It is the newest
// supported version; NeedOldestEngineCLI is the oldest.
func NeedEngineCLI(t testing.TB, bin string) string {
	t.Helper()
	dir, err := EnginesDir()
	if err != nil {
		Missing(t, "the pinned "+bin+" CLI", err.Error())
		return ""
	}
	return needCLIIn(t, dir, bin, "the pinned "+bin+" CLI")
}

// OldestDir is the folder, inside the engines folder, of the pinned install
// of the oldest supported version of each agent CLI.
const OldestDir = "oldest"

// NeedOldestEngineCLI is NeedEngineCLI for the oldest supported version of
// the CLI (deploy/engines/oldest), which the engines' essential tests also
// run on.
func NeedOldestEngineCLI(t testing.TB, bin string) string {
	t.Helper()
	dir, err := EnginesDir()
	if err != nil {
		Missing(t, "the oldest pinned "+bin+" CLI", err.Error())
		return ""
	}
	return needCLIIn(t, filepath.Join(dir, OldestDir), bin, "the oldest pinned "+bin+" CLI")
}

func needCLIIn(t testing.TB, dir, bin, what string) string {
	t.Helper()
	p := filepath.Join(dir, "node_modules", ".bin", bin)
	fi, err := os.Stat(p)
	switch {
	case err != nil:
		Missing(t, what, err.Error())
	case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
		Missing(t, what, p+" is not an executable file")
	}
	return dir
}

// EnginesDir is the folder holding the pinned npm install of the agent
// CLIs: $CORRAL_ENGINES_DIR when set (the Makefile sets it), else the
// module's deploy/engines.
func EnginesDir() (string, error) {
	if dir := os.Getenv(locate.EnvEnginesDir); dir != "" {
		return filepath.Abs(dir)
	}
	root, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "deploy", "engines"), nil
}

// ModuleRoot is the folder holding the module's go.mod, found by walking
// up from the working directory (a test runs in its package's folder).
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// PlainShell makes /bin/sh the shell ($SHELL) of the test process and of
// everything it starts, so a terminal opened without a command starts a
// shell that reads none of the user's startup files. Those may be slow or
// wait on a lock (a shell killed while it started can leave one behind, and
// every later interactive shell then waited a minute), and a test must not
// depend on them. TestMain calls it before m.Run, while no test runs.
func PlainShell() {
	os.Setenv("SHELL", "/bin/sh")
	// A POSIX shell reads $ENV when interactive.
	os.Unsetenv("ENV")
}

// EscapingJob is a command (for a terminal or a shell tool) that starts a
// job in a session of its own (setsid), ignoring SIGHUP, writes the job's
// pid to pidFile once it runs, and then sleeps: the job is in neither the
// process group nor the session of whatever started the command, so only
// a cgroup sweep reaches it.
func EscapingJob(pidFile string) []string {
	return []string{"sh", "-c", `setsid sh -c 'trap "" HUP; echo $$ > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 300' "$0" </dev/null >/dev/null 2>&1 & exec sleep 300`, pidFile}
}
