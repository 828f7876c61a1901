// Package graphtest helps test graph runs end to end: it builds the
// project's binaries, finds the per-stage script-engine scenarios in its
// testdata, makes policies from them, and makes git repositories to run
// in.
package graphtest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/corral-dev/corral/internal/graph"
)

// Binaries are the project's programs, built for a test binary's run.
type Binaries struct {
	Dir        string
	Supervisor string
	Runner     string
}

var built struct {
	once sync.Once
	bins Binaries
	err  error
}

// Build builds cmd/supervisor and cmd/runner once per test binary; Cleanup
// removes them (call it from TestMain).
func Build(t testing.TB) Binaries {
	t.Helper()
	built.once.Do(func() {
		root, err := ModuleRoot()
		if err != nil {
			built.err = err
			return
		}
		dir, err := os.MkdirTemp("", "corral-graph-bin-")
		if err != nil {
			built.err = err
			return
		}
		cmd := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/supervisor", "./cmd/runner")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			built.err = fmt.Errorf("go build: %v\n%s", err, out.String())
			return
		}
		built.bins = Binaries{Dir: dir, Supervisor: filepath.Join(dir, "supervisor"), Runner: filepath.Join(dir, "runner")}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.bins
}

// Cleanup removes the built binaries.
func Cleanup() {
	if built.bins.Dir != "" {
		os.RemoveAll(built.bins.Dir)
	}
}

// ModuleRoot is the folder holding go.mod.
func ModuleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", fmt.Errorf("no caller")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s", file)
		}
		dir = parent
	}
}

// ScenarioDir is the folder of scenario sets (testdata/scenarios).
func ScenarioDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "scenarios")
}

// stageFiles names each stage's scenario file in a set.
var stageFiles = map[graph.Stage]string{
	graph.StagePlan:      "plan.yaml",
	graph.StageSetGoal:   "setgoal.yaml",
	graph.StageCritique:  "critique.yaml",
	graph.StageImplement: "implement.yaml",
	graph.StageTest:      "test.yaml",
	graph.StageGate:      "gate.yaml",
	graph.StageGoalGate:  "goal.yaml",
	graph.StageReport:    "report.yaml",
}

// Policy is a script-engine policy whose stages play the scenarios of the
// named set, falling back to the happy set's for stages the set does not
// script.
func Policy(set string) graph.Policy {
	p := graph.Policy{Engine: "script", Stages: map[graph.Stage]graph.StagePolicy{}}
	for st, file := range stageFiles {
		path := filepath.Join(ScenarioDir(), set, file)
		if _, err := os.Stat(path); err != nil {
			path = filepath.Join(ScenarioDir(), "happy", file)
		}
		p.Stages[st] = graph.StagePolicy{Scenario: path}
	}
	return p
}

// RequireGit skips a test without git, except in CI, where it fails.
func RequireGit(t testing.TB) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("git is needed: %v", err)
		}
		t.Skipf("git is needed: %v", err)
	}
}

// Repo makes a git repository with one commit.
func Repo(t testing.TB) string {
	t.Helper()
	RequireGit(t)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"commit", "-q", "--allow-empty", "-m", "start"},
	} {
		cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=T", "-c", "user.email=t@t"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return dir
}
