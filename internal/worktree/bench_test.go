package worktree_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/worktree"
)

// bigTree writes n files, 100 to a folder, with 100 distinct contents.
func bigTree(b *testing.B, n int) string {
	b.Helper()
	root := b.TempDir()
	for i := 0; i < n; i++ {
		dir := filepath.Join(root, fmt.Sprintf("d%03d", i/10000), fmt.Sprintf("e%03d", (i/100)%100))
		if i%100 == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		content := fmt.Sprintf("package p%d\n\nconst X = %d\n", i%100, i%100)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d.go", i)), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

// BenchmarkCommandOnUnchangedTree is the capture's cost per shell command
// (Before, then After) on a worktree of 100,000 files where the command
// changed nothing: following the tree with inotify, and walking it. Goal:
// p50 ≤ 20 ms.
func BenchmarkCommandOnUnchangedTree(b *testing.B) {
	root := bigTree(b, 100_000)
	for _, walk := range []bool{false, true} {
		name := map[bool]string{false: "inotify", true: "walk"}[walk]
		b.Run(name, func(b *testing.B) {
			start := time.Now()
			c, err := worktree.Open(root, worktree.Options{Store: filepath.Join(b.TempDir(), "store"), Walk: walk})
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			opened := time.Since(start)
			if !walk && !c.Watching() {
				b.Fatal("inotify is not available")
			}
			var took []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if err := c.Before(); err != nil {
					b.Fatal(err)
				}
				changes, err := c.After()
				if err != nil || len(changes) != 0 {
					b.Fatalf("changes %v, %v", changes, err)
				}
				took = append(took, time.Since(t0))
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(opened.Milliseconds()), "open-ms")
		})
	}
}
