//go:build linux

package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/smallfs"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// A session whose event log cannot be written (a real full tmpfs) meets no
// wait until it can: a wait under way when the session becomes
// storageFailed ends at once with storage_unavailable, and so does a wait
// that begins while it is; the feed tells both changes (sessionStorageFailed,
// sessionStorageRestored), and once room returns a wait is met again.
func TestWaitEndsWhenTheSessionCannotRecord(t *testing.T) {
	root := smallfs.Dir(t, 2<<20)
	if root == "" {
		return
	}
	m := newScriptManager(t, "", func(c *Config) { c.StateDir = filepath.Join(root, "state") })
	s, err := m.Create(ctxT(t), scriptSpec(t, slowScenario))
	if err != nil {
		t.Fatal(err)
	}
	mustCommand(t, m, s.ID, command.Send{Text: "long job"})
	readUntil(t, m, s.ID, 1, "turnStarted")
	life, err := m.Feed(ctxT(t), FeedOptions{Sessions: []string{s.ID}, Types: []string{string(api.LifeStorageFailed), string(api.LifeStorageRestored)}})
	if err != nil {
		t.Fatal(err)
	}
	defer life.Close()

	// A wait for the running turn's end, given far longer than the test.
	waitCtx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	waited := make(chan error, 1)
	go func() {
		_, err := m.Wait(waitCtx, s.ID, WaitOptions{For: api.WaitTurnEnd})
		waited <- err
	}()
	// It follows the feed once a reader waits on the bus (the lifecycle
	// feed above reads nothing until asked).
	waitFor(t, func() bool { return busWaited(m) })

	filler := smallfs.Fill(t, root, 0)
	var refusal error
	for i := 0; refusal == nil; i++ {
		if i > 2000 {
			t.Fatal("the disk never filled")
		}
		r, err := m.Command(ctxT(t), s.ID, command.Send{Text: fmt.Sprintf("message %d", i)})
		if err == nil {
			err = r.Err()
		}
		refusal = err
	}
	if !errors.Is(refusal, wire.ErrStorageUnavailable) {
		t.Fatalf("a send on the full disk: %v, want storage_unavailable", refusal)
	}
	select {
	case err := <-waited:
		if !errors.Is(err, wire.ErrStorageUnavailable) {
			t.Fatalf("the wait under way when the storage failed: %v, want storage_unavailable", err)
		}
	case <-time.After(time.Minute): // the wait's own timeout is ten
		t.Fatal("the wait under way did not end when the session became storageFailed")
	}
	expectLife(t, life, api.LifeStorageFailed)

	// A wait that begins now ends at once.
	for _, f := range api.WaitFors() {
		if _, err := m.Wait(waitCtx, s.ID, WaitOptions{For: f}); !errors.Is(err, wire.ErrStorageUnavailable) {
			t.Fatalf("a %s wait on a storageFailed session: %v, want storage_unavailable", f, err)
		}
	}

	// Room again: the runner's probe recovers the session, which the
	// feed tells, and the interrupted turn's end meets a wait.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	expectLife(t, life, api.LifeStorageRestored)
	from := int64(0)
	r, err := m.Wait(ctxT(t), s.ID, WaitOptions{For: api.WaitTurnEnd, After: &from})
	if err != nil || !r.Met || len(r.Events) != 1 {
		t.Fatalf("a wait once the storage is back: %+v, %v", r, err)
	}
	var ended struct{ Data event.TurnEndedData }
	if err := json.Unmarshal(r.Events[0], &ended); err != nil || ended.Data.Outcome != "interrupted" {
		t.Fatalf("the turn the failure ended: %s, %v", r.Events[0], err)
	}
}

// expectLife reads f until the lifecycle change typ, which must come.
func expectLife(t *testing.T, f *Feed, typ api.LifecycleType) api.Lifecycle {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		ev, err := f.Next(ctx)
		if err != nil {
			t.Fatalf("waiting for %s on the feed: %v", typ, err)
		}
		if ev.Kind != FeedLifecycle {
			continue
		}
		var l api.Lifecycle
		if err := json.Unmarshal(ev.Line, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type != typ {
			t.Fatalf("lifecycle %s on the feed, want %s", l.Type, typ)
		}
		if typ == api.LifeStorageFailed && (l.Error == nil || l.Error.Code != wire.CodeStorageUnavailable) {
			t.Fatalf("%s with error %+v, want storage_unavailable", typ, l.Error)
		}
		return l
	}
}
