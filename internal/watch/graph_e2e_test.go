package watch

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/corral-dev/corral/internal/graph/store"
	"github.com/corral-dev/corral/internal/testenv"
)

// The graph view in a real terminal: `supervisor watch --graph` in a tmux
// pane shows the Flow tab, switches to Nodes on 2, and quits on q.
func TestTheGraphViewInTmux(t *testing.T) {
	tmuxBin := testenv.NeedTmux(t)
	bins := buildBinaries(t)
	base, err := os.MkdirTemp("", "cg-") // short: the socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	state := filepath.Join(base, "state")
	startSupervisor(t, bins, state)
	st, err := store.ForState(state, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Create(context.Background(), sampleRun(t)); err != nil {
		t.Fatal(err)
	}
	pane := startTmux(t, tmuxBin, base, []string{bins.supervisor, "watch", "--state", state, "--graph", "r1"})
	pane.waitFor(t, "[1 Flow]")
	pane.waitFor(t, "U3  Grüße in drei.txt")
	pane.waitFor(t, "Blocked gate:U3 rejected — retry U3")
	pane.keys(t, "2")
	pane.waitFor(t, "[2 Nodes]")
	pane.waitFor(t, "● implement:U2 script")
	pane.keys(t, "q")
	pane.waitFor(t, "watch exited with status 0")
}
