// Package graphtest helps test graph runs end to end: it finds the
// per-stage script-engine scenarios in its testdata, makes policies from
// them, makes git repositories to run in, and builds large runs for
// benchmarks.
package graphtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/testenv"
)

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

// Repo makes a git repository with one commit.
func Repo(t testing.TB) string {
	t.Helper()
	testenv.NeedGit(t)
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
