//go:build unix

package hunks_test

import (
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
	"github.com/corral-dev/corral/pkg/hunks"
)

// tenThousandLines returns a 10,000-line file and a copy with 100 changes
// spread through it: replaced, inserted and deleted lines.
func tenThousandLines() (old, new []byte) {
	r := rand.New(rand.NewPCG(10_000, 100))
	var o, n strings.Builder
	for i := range 10_000 {
		line := fmt.Sprintf("\tline %d: value := compute(%d, %q)\n", i, r.IntN(1000), "abcdefgh"[:1+r.IntN(8)])
		o.WriteString(line)
		if i%100 != 50 {
			n.WriteString(line)
			continue
		}
		switch (i / 100) % 3 {
		case 0:
			fmt.Fprintf(&n, "\tline %d: changed\n", i)
		case 1:
			n.WriteString(line)
			fmt.Fprintf(&n, "\tinserted after %d\n", i)
		case 2: // deleted
		}
	}
	return []byte(o.String()), []byte(n.String())
}

// cpuTime returns the processor time used so far by this process
// (syscall.RUSAGE_SELF) or by its waited-for children (RUSAGE_CHILDREN).
func cpuTime(b *testing.B, who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports cpu-ns/op, the processor time per operation since
// start: unlike ns/op it counts work, not waiting, so it stays comparable
// on a busy machine.
func reportCPU(b *testing.B, who int, start time.Duration) {
	b.ReportMetric(float64(cpuTime(b, who)-start)/float64(b.N), "cpu-ns/op")
}

func benchmarkDiff(b *testing.B, old, new []byte, wantHunks int) {
	b.SetBytes(int64(len(old) + len(new)))
	b.ReportAllocs()
	start := cpuTime(b, syscall.RUSAGE_SELF)
	defer func() { reportCPU(b, syscall.RUSAGE_SELF, start) }()
	for b.Loop() {
		e, err := hunks.Diff("f", hunks.Present(old), hunks.Present(new))
		if err != nil {
			b.Fatal(err)
		}
		if len(e.Hunks) != wantHunks {
			b.Fatalf("%d hunks, want %d", len(e.Hunks), wantHunks)
		}
	}
}

func BenchmarkDiff10kLines100Changes(b *testing.B) {
	old, new := tenThousandLines()
	benchmarkDiff(b, old, new, 100)
}

func BenchmarkDiff1MBSingleLine(b *testing.B) {
	line := strings.Repeat("abcdefghij", 100_000)
	old := []byte(line)
	new := []byte(line[:500_000] + "X" + line[500_001:])
	benchmarkDiff(b, old, new, 1)
}

func BenchmarkDiff100kLinesOneChange(b *testing.B) {
	var o strings.Builder
	for i := range 100_000 {
		fmt.Fprintf(&o, "line %d of a long file\n", i)
	}
	old := o.String()
	new := strings.Replace(old, "line 61234 of", "line 61234 in", 1)
	benchmarkDiff(b, []byte(old), []byte(new), 1)
}

// BenchmarkDiffPatchFiles10kLines does what git diff --no-index does on the
// same pair, short of starting a process: read both files, diff them, and
// render the patch.
func BenchmarkDiffPatchFiles10kLines(b *testing.B) {
	oldPath, newPath := writeTenThousandLines(b)
	b.ReportAllocs()
	start := cpuTime(b, syscall.RUSAGE_SELF)
	defer func() { reportCPU(b, syscall.RUSAGE_SELF, start) }()
	for b.Loop() {
		old, err := os.ReadFile(oldPath)
		if err != nil {
			b.Fatal(err)
		}
		new, err := os.ReadFile(newPath)
		if err != nil {
			b.Fatal(err)
		}
		e, err := hunks.Diff("f", hunks.Present(old), hunks.Present(new))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := e.Patch(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGitDiffNoIndex10kLines runs git diff --no-index on the same
// 10,000-line pair, for comparison; each run includes starting git.
// Its cpu-ns/op is git's own processor time.
func BenchmarkGitDiffNoIndex10kLines(b *testing.B) {
	testenv.NeedGit(b)
	oldPath, newPath := writeTenThousandLines(b)
	start := cpuTime(b, syscall.RUSAGE_CHILDREN)
	defer func() { reportCPU(b, syscall.RUSAGE_CHILDREN, start) }()
	for b.Loop() {
		cmd := exec.Command("git", "diff", "--no-index", "--no-color", "--no-ext-diff", oldPath, newPath)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull)
		out, err := cmd.Output()
		// Exit status 1 means the files differ, as they do.
		if exitErr, ok := err.(*exec.ExitError); !ok || exitErr.ExitCode() != 1 || len(out) == 0 {
			b.Fatalf("git diff: %v", err)
		}
	}
}

func writeTenThousandLines(b *testing.B) (oldPath, newPath string) {
	b.Helper()
	old, new := tenThousandLines()
	dir := b.TempDir()
	oldPath, newPath = filepath.Join(dir, "old"), filepath.Join(dir, "new")
	if err := os.WriteFile(oldPath, old, 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(newPath, new, 0o644); err != nil {
		b.Fatal(err)
	}
	return oldPath, newPath
}

func BenchmarkApply10kLines100Changes(b *testing.B) {
	old, new := tenThousandLines()
	e, err := hunks.Diff("f", hunks.Present(old), hunks.Present(new))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name    string
		current []byte
	}{
		{"undrifted", old},
		{"drifted", append([]byte("one more line\n"), old...)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.Apply(hunks.Present(bc.current), e.IDs()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
