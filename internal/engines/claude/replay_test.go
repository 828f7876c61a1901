package claude

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
	enginetest.ReplayOnEachVersion(t, "claude", func(t *testing.T, dir string) (string, error) {
		return ReplayGolden(context.Background(), replayRequest(t, dir), proc.BaseEnv())
	})
}

// TestReplayGoldenNamesTheFirstDifferingFrame replays against a recorded
// transcript whose initialize request had another hook: the replay fails
// naming that frame and the field.
func TestReplayGoldenNamesTheFirstDifferingFrame(t *testing.T) {
	dir := enginetest.EnginesDir(t, "claude", false)
	version, err := ReplayGolden(context.Background(), replayRequest(t, dir), proc.BaseEnv())
	if err != nil {
		t.Fatalf("replay on %s: %v", version, err)
	}
	raw, err := goldenFS.ReadFile("testdata/golden/" + version + "/" + goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	drifted := strings.Replace(string(raw), "corral_pre_tool_use", "corral_pre_tool_call", 1)
	saved := embeddedGolden
	t.Cleanup(func() { embeddedGolden = saved })
	embeddedGolden = transcript.Golden{Dir: "golden", FS: fstest.MapFS{
		"golden/" + version + "/" + goldenFile: {Data: []byte(drifted)},
	}}
	_, err = ReplayGolden(context.Background(), replayRequest(t, dir), proc.BaseEnv())
	if err == nil || !strings.Contains(err.Error(), "frame 1 ") || !strings.Contains(err.Error(), "corral_pre_tool_call") {
		t.Fatalf("replay against a drifted transcript: %v; want frame 1 and the field named", err)
	}
}

// replayRequest is a replay's, as the doctor prepares it: fresh folders,
// and the fake model playing the golden scenario.
func replayRequest(t *testing.T, enginesDir string) engineprobe.ReplayRequest {
	t.Helper()
	o := engineprobe.ReplayRequest{Engine: "claude", EnginesDir: enginesDir, Key: testKey,
		Dir: t.TempDir(), Cwd: t.TempDir(), Home: t.TempDir()}
	_, o.ModelEndpoint = startFake(t, goldenScenario(t), map[string]string{"cwd": o.Cwd})
	return o
}
