package supervisor

import (
	"errors"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

// TestGetManyKeepsTheOrderOfItsIDs: GetMany describes each id in its
// place, several at a time, with the error of each that fails.
func TestGetManyKeepsTheOrderOfItsIDs(t *testing.T) {
	m := newScriptManager(t, "")
	m.getWorkers = 2 // fewer than the ids: some wait for a turn
	var live []string
	for range 3 {
		s, err := m.Create(ctxT(t), scriptSpec(t, echoScenario))
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, s.ID)
	}
	deleted := live[1]
	if err := m.Delete(ctxT(t), deleted); err != nil {
		t.Fatal(err)
	}
	ids := []string{live[2], "000000000000", live[0], deleted, "../escape"}
	got := m.GetMany(ctxT(t), ids)
	if len(got) != len(ids) {
		t.Fatalf("%d results for %d ids", len(got), len(ids))
	}
	for i, id := range ids {
		found := id == live[0] || id == live[2]
		switch {
		case found && (got[i].Err != nil || got[i].Session.ID != id || !got[i].Session.Live || got[i].Session.Status == nil):
			t.Errorf("%s: %+v", id, got[i])
		case !found && !errors.Is(got[i].Err, wire.ErrNotFound):
			t.Errorf("%s: %+v, want not_found", id, got[i])
		}
	}
}
