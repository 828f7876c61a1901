package service

import (
	"context"
	"testing"

	"github.com/corral-dev/corral/internal/graph/graphapi"
	"github.com/corral-dev/corral/internal/graph/graphtest"
)

// benchService is a service whose store holds a 500-node run.
func benchService(b *testing.B) *Service {
	b.Helper()
	svc, err := New(Config{State: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	r := graphtest.BigRun(b, "big", 165) // 3×165+5 = 500 nodes
	if len(r.Nodes) != 500 {
		b.Fatalf("%d nodes", len(r.Nodes))
	}
	if err := svc.Store().Create(context.Background(), r); err != nil {
		b.Fatal(err)
	}
	return svc
}

// BenchmarkGraph500 times graph_next and graph_status on a 500-node run,
// each reading the run from disk, beside the read alone (the floor).
func BenchmarkGraph500(b *testing.B) {
	svc := benchService(b)
	ctx := context.Background()
	b.Run("load", func(b *testing.B) {
		graphtest.P50(b, func() error { _, err := svc.Store().Load("big"); return err })
	})
	b.Run("next", func(b *testing.B) {
		graphtest.P50(b, func() error { _, err := svc.Next(ctx, graphapi.RunRef{RunID: "big"}); return err })
	})
	b.Run("status", func(b *testing.B) {
		graphtest.P50(b, func() error { _, err := svc.Status(ctx, graphapi.StatusRequest{RunID: "big"}); return err })
	})
}
