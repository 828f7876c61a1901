package plugin

import (
	"context"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/pkg/engine"
)

func TestStartedClaimsWhatThePluginAdvertised(t *testing.T) {
	e := New().(*Engine)
	if e.Started() != engine.Engine(e) {
		t.Fatal("before Start, Started is not the engine itself")
	}
	if _, err := e.Turn(context.Background(), engine.TurnInput{Text: "hi"}); err == nil || !strings.Contains(err.Error(), "Start was not called") {
		t.Fatalf("Turn before Start: %v", err)
	}
	dir := t.TempDir()
	_, err := e.Start(context.Background(), engine.StartOptions{
		SessionID: "e1", Dir: dir, Cwd: dir, Host: enginetest.NewHost(nil),
		Config: map[string]string{KeyPluginPath: scriptPlugin},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// The factory's engine claims nothing it may lack.
	var plain engine.Engine = e
	if _, ok := plain.(engine.Judge); ok {
		t.Fatal("the factory's engine claims an optional interface before knowing the plugin")
	}
	started := e.Started()
	_, steer := started.(engine.Steerer)
	_, judge := started.(engine.Judge)
	_, fork := started.(engine.Forker)
	_, compact := started.(engine.Compactor)
	if steer || !judge || !fork || !compact {
		t.Fatalf("the script plugin started as steer %v judge %v fork %v compact %v", steer, judge, fork, compact)
	}
	if _, err := e.Start(context.Background(), engine.StartOptions{}); err == nil {
		t.Fatal("a second Start was accepted")
	}
}
