package copilot

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/transcript"
)

// TestReplayGoldenOnTheInstalledCLI replays the golden turn as `supervisor
// doctor engines` does, on the newest and the oldest supported CLI: both
// match their recorded transcript.
func TestReplayGoldenOnTheInstalledCLI(t *testing.T) {
	enginetest.ReplayOnEachVersion(t, "copilot", replayGolden)
}

// TestReplayGoldenNamesTheFirstDifferingMessage replays against a recorded
// transcript whose session.create asked for another wire API: the replay
// fails naming that message and the field.
func TestReplayGoldenNamesTheFirstDifferingMessage(t *testing.T) {
	dir := enginetest.EnginesDir(t, "copilot", false)
	version, err := replayGolden(t, dir)
	if err != nil {
		t.Fatalf("replay on %s: %v", version, err)
	}
	files := fstest.MapFS{}
	for _, f := range []string{goldenSent, goldenReceived} {
		raw, err := goldenFS.ReadFile("testdata/golden/" + version + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		files["golden/"+version+"/"+f] = &fstest.MapFile{Data: raw}
	}
	sent := files["golden/"+version+"/"+goldenSent]
	drifted := strings.Replace(string(sent.Data), `"wireApi":"completions"`, `"wireApi":"responses"`, 1)
	if drifted == string(sent.Data) {
		t.Fatal("the recorded session.create has no wireApi completions")
	}
	sent.Data = []byte(drifted)
	saved := embeddedGolden
	t.Cleanup(func() { embeddedGolden = saved })
	embeddedGolden = transcript.Golden{Dir: "golden", FS: files}
	_, err = replayGolden(t, dir)
	if err == nil || !strings.Contains(err.Error(), "frame 2 ") || !strings.Contains(err.Error(), "responses") {
		t.Fatalf("replay against a drifted transcript: %v; want frame 2 and the field named", err)
	}
}

// replayGolden replays as the doctor does: fresh folders, and the fake
// model playing the golden scenario and checking the key.
func replayGolden(t *testing.T, enginesDir string) (string, error) {
	t.Helper()
	const key = "sk-corral-replay"
	req := engineprobe.ReplayRequest{Engine: "copilot", EnginesDir: enginesDir, Key: key,
		Dir: t.TempDir(), Cwd: t.TempDir(), Home: t.TempDir()}
	_, req.ModelEndpoint = enginetest.StartFake(t, goldenScenario(t), key, map[string]string{"cwd": req.Cwd})
	ctx, cancel := context.WithTimeout(context.Background(), 3*testWait)
	defer cancel()
	return ReplayGolden(ctx, req, proc.BaseEnv())
}
