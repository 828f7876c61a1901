package codex

import (
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
)

// goldenReplay is ReplayGolden played as the doctor plays it.
var goldenReplay = enginetest.GoldenReplay{CLI: "codex", Key: testKey, Replay: ReplayGolden, Timeout: turnDeadline, Embedded: &embeddedGolden}

// TestReplayGoldenOnTheInstalledCLI replays the golden turn as `supervisor
// doctor engines` does, on the newest and the oldest supported CLI: both
// match their recorded transcript.
func TestReplayGoldenOnTheInstalledCLI(t *testing.T) {
	goldenReplay.OnEachVersion(t)
}

// TestReplayGoldenNamesTheFirstDifferingLine replays against a recorded
// transcript whose thread/start asked for another approval policy: the
// replay fails naming that line and the field.
func TestReplayGoldenNamesTheFirstDifferingLine(t *testing.T) {
	// Line 1 is the header, then initialize, initialized, thread/start.
	goldenReplay.Drifted(t, enginetest.Drift{
		Files: []string{goldenFile}, File: goldenFile,
		Old: `"approvalPolicy":"on-request"`, New: `"approvalPolicy":"untrusted"`,
		Frame: 4, Named: "untrusted",
	})
}
