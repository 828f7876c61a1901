package graph

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/graph.md names every graph event type and error code.
func TestTheDocsNameEveryEventAndCode(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "graph.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	for _, ev := range []string{EvRunOpened, EvNodeClaimed, EvNodeReclaimed, EvNodeReleased, EvNodeSession, EvNodeFinished,
		EvNodeMalformed, EvResultSuperseded, EvSpecDerived, EvRetried, EvSettled, EvRunComplete, EvRunBlocked} {
		if !strings.Contains(doc, "| `"+ev+"` |") {
			t.Errorf("docs/graph.md does not list the event %s", ev)
		}
	}
	for _, c := range []Code{CodeUnknownRun, CodeUnknownNode, CodeDepsUnmet, CodeNodeFinished, CodeNodeRunning, CodeSuperseded,
		CodeNothingRetry, CodeRunEnded, CodeBadSpec, CodeBadResult, CodeBadRequest, CodeRunExists, CodeLockTimeout, CodeStoreDamaged, CodeStoreVersion} {
		if !strings.Contains(doc, "`"+string(c)+"`") {
			t.Errorf("docs/graph.md does not list the error code %s", c)
		}
	}
}
