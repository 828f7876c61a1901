package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/pkg/command"
)

func TestPresenceCloseWritesTheLastStateAndThenNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), PresenceFile)
	var turn, writes atomic.Int32
	p := newPresenceWriter(func() string { return path }, func() command.Status {
		writes.Add(1)
		return command.Status{Turn: int(turn.Load())}
	}, zap.NewNop())
	turn.Store(1)
	p.touch()
	turn.Store(2)
	p.close()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st command.Status
	if err := json.Unmarshal(raw, &st); err != nil || st.Turn != 2 {
		t.Fatalf("presence.json after close: %s (%v)", raw, err)
	}
	n := writes.Load()
	p.touch()
	p.close()
	if writes.Load() != n {
		t.Fatal("presence was written after close")
	}
}
