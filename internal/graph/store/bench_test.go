package store

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphtest"
)

// BenchmarkMutation times one store change (lock, read fresh, apply,
// write a temporary file, fsync, rename, release), on a run of a typical
// size (3 subgoals, 14 nodes) and on a 500-node run, beside its floor: the
// durable replacement of the same bytes alone.
func BenchmarkMutation(b *testing.B) {
	for _, size := range []struct {
		name     string
		subgoals int
	}{{"14-nodes", 3}, {"500-nodes", 165}} {
		s := openStore(b, Options{})
		r := graphtest.BigRun(b, "r", size.subgoals)
		if err := s.Create(context.Background(), r); err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(r)
		floor := filepath.Join(b.TempDir(), "run.json")
		b.Run(size.name+"/floor", func(b *testing.B) {
			graphtest.P50(b, func() error { return atomicfile.Write(floor, raw, 0o600) })
		})
		b.Run(size.name+"/update", func(b *testing.B) {
			graphtest.P50(b, func() error {
				_, err := s.Update(context.Background(), "r", func(r *graph.Run) error {
					r.Emit("bench", "", nil)
					return nil
				})
				return err
			})
		})
	}
}
