package copilot

import (
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
)

// goldenReplay is ReplayGolden played as the doctor plays it, the fake
// model checking the key.
var goldenReplay = enginetest.GoldenReplay{CLI: "copilot", Key: "sk-corral-replay", Replay: ReplayGolden, Timeout: 3 * testWait, Embedded: &embeddedGolden}

// TestReplayGoldenOnTheInstalledCLI replays the golden turn as `supervisor
// doctor engines` does, on the newest and the oldest supported CLI: both
// match their recorded transcript.
func TestReplayGoldenOnTheInstalledCLI(t *testing.T) {
	goldenReplay.OnEachVersion(t)
}

// TestReplayGoldenNamesTheFirstDifferingMessage replays against a recorded
// transcript whose session.create asked for another wire API: the replay
// fails naming that message and the field.
func TestReplayGoldenNamesTheFirstDifferingMessage(t *testing.T) {
	goldenReplay.Drifted(t, enginetest.Drift{
		Files: []string{goldenSent, goldenReceived}, File: goldenSent,
		Old: `"wireApi":"completions"`, New: `"wireApi":"responses"`,
		Frame: 2, Named: "responses",
	})
}
