//go:build unix

package hunkscli_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testenv"
)

// BenchmarkProcessVsGit runs `supervisor hunks diff OLD NEW` and
// `git diff --no-index OLD NEW` as whole processes on the same pair, one
// after the other in each iteration, and reports each one's processor time
// (user + system, from the kernel's accounting of the child) and their
// ratio, which is the figure to quote: the machine's load moves both alike.
// deploy/bench/hunks-vs-git.sh runs it.
func BenchmarkProcessVsGit(b *testing.B) {
	git := testenv.NeedGit(b)
	sup := buildSupervisor(b)
	for _, bc := range []struct {
		name           string
		lines, changes int
	}{
		{"10k-lines-100-changes", 10_000, 100},
		{"200k-lines-2200-changes", 200_000, 2_200},
	} {
		b.Run(bc.name, func(b *testing.B) {
			old, new := changedPair(bc.lines, bc.changes)
			dir := b.TempDir()
			oldPath, newPath := filepath.Join(dir, "old"), filepath.Join(dir, "new")
			if err := os.WriteFile(oldPath, old, 0o644); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(newPath, new, 0o644); err != nil {
				b.Fatal(err)
			}
			ours := exec.Command(sup, "hunks", "diff", oldPath, newPath)
			theirs := exec.Command(git, "diff", "--no-index", "--no-color", "--no-ext-diff", oldPath, newPath)
			theirs.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
			// Same hunks, or the comparison means nothing.
			a, bh := countHunks(b, ours, 0), countHunks(b, theirs, 1)
			if a != bh {
				b.Fatalf("supervisor finds %d hunks, git %d", a, bh)
			}
			var cpuOurs, cpuGit time.Duration
			for b.Loop() {
				cpuOurs += run(b, ours, 0)
				cpuGit += run(b, theirs, 1)
			}
			b.ReportMetric(float64(cpuOurs)/float64(b.N)/1e6, "supervisor-cpu-ms/op")
			b.ReportMetric(float64(cpuGit)/float64(b.N)/1e6, "git-cpu-ms/op")
			b.ReportMetric(float64(cpuOurs)/float64(cpuGit), "ratio")
		})
	}
}

// changedPair returns a file of n lines and a copy with the given number of
// changes spread evenly through it, alternately a replaced line and an
// inserted one.
func changedPair(n, changes int) (old, new []byte) {
	r := rand.New(rand.NewPCG(uint64(n), uint64(changes)))
	var o, nw bytes.Buffer
	every := n / changes
	for i := range n {
		line := fmt.Sprintf("\tline %d: value := compute(%d, %q)\n", i, r.IntN(1000), "abcdefgh"[:1+r.IntN(8)])
		o.WriteString(line)
		if i%every != every/2 {
			nw.WriteString(line)
			continue
		}
		if (i/every)%2 == 0 {
			fmt.Fprintf(&nw, "\tline %d: changed\n", i)
		} else {
			nw.WriteString(line)
			fmt.Fprintf(&nw, "\tinserted after %d\n", i)
		}
	}
	return o.Bytes(), nw.Bytes()
}

// buildSupervisor builds the supervisor binary as make build does.
func buildSupervisor(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "supervisor")
	cmd := exec.Command("go", "build", "-o", out, "github.com/corral-dev/corral/cmd/supervisor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build the supervisor: %v\n%s", err, msg)
	}
	return out
}

// run runs a copy of cmd, which must exit with status want, and returns the
// processor time it used.
func run(b *testing.B, cmd *exec.Cmd, want int) time.Duration {
	c := exec.Command(cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	err := c.Run()
	if code := c.ProcessState.ExitCode(); code != want {
		b.Fatalf("%s: exit status %d (%v), want %d", strings.Join(cmd.Args, " "), code, err, want)
	}
	ru := c.ProcessState.SysUsage().(*syscall.Rusage)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func countHunks(b *testing.B, cmd *exec.Cmd, want int) int {
	c := exec.Command(cmd.Path, cmd.Args[1:]...)
	c.Env = cmd.Env
	out, _ := c.Output()
	if code := c.ProcessState.ExitCode(); code != want {
		b.Fatalf("%s: exit status %d, want %d", strings.Join(cmd.Args, " "), code, want)
	}
	return bytes.Count(out, []byte("\n@@ "))
}
