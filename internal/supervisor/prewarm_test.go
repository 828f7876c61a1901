package supervisor

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/sessiondir"
)

// A supervisor removes, as it starts, the session folders it reserved in a
// previous run for engines started ahead, and keeps those another node on
// the same storage reserved (docs/fleet.md), which that node's warm runners
// may be using.
func TestLeftoverReservedFoldersAreRemovedOnlyByTheirOwner(t *testing.T) {
	state := t.TempDir()
	sessions := filepath.Join(state, "sessions")
	host, _ := os.Hostname()
	_, mine, err := sessiondir.Reserve(sessions, host+"\n"+state)
	if err != nil {
		t.Fatal(err)
	}
	_, theirs, err := sessiondir.Reserve(sessions, "another-node\n/var/lib/corral")
	if err != nil {
		t.Fatal(err)
	}
	newScriptManager(t, "", func(c *Config) { c.StateDir = state })
	if _, err := os.Stat(mine); !os.IsNotExist(err) {
		t.Errorf("this supervisor's leftover reserved folder is still there: %v", err)
	}
	if _, ok := sessiondir.IsReserved(theirs); !ok {
		t.Error("another node's reserved folder was removed")
	}
}
