package codex

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
	enginetest.ReplayOnEachVersion(t, "codex", replayGolden)
}

// TestReplayGoldenNamesTheFirstDifferingLine replays against a recorded
// transcript whose thread/start asked for another approval policy: the
// replay fails naming that line and the field.
func TestReplayGoldenNamesTheFirstDifferingLine(t *testing.T) {
	dir := enginetest.EnginesDir(t, "codex", false)
	version, err := replayGolden(t, dir)
	if err != nil {
		t.Fatalf("replay on %s: %v", version, err)
	}
	raw, err := goldenFS.ReadFile("testdata/golden/" + version + "/" + goldenFile)
	if err != nil {
		t.Fatal(err)
	}
	drifted := strings.Replace(string(raw), `"approvalPolicy":"on-request"`, `"approvalPolicy":"untrusted"`, 1)
	if drifted == string(raw) {
		t.Fatal("the recorded transcript has no thread/start with approvalPolicy on-request")
	}
	saved := embeddedGolden
	t.Cleanup(func() { embeddedGolden = saved })
	embeddedGolden = transcript.Golden{Dir: "golden", FS: fstest.MapFS{
		"golden/" + version + "/" + goldenFile: {Data: []byte(drifted)},
	}}
	_, err = replayGolden(t, dir)
	// Line 1 is the header, then initialize, initialized, thread/start.
	if err == nil || !strings.Contains(err.Error(), "frame 4 ") || !strings.Contains(err.Error(), "untrusted") {
		t.Fatalf("replay against a drifted transcript: %v; want frame 4 and the field named", err)
	}
}

// replayGolden replays as the doctor does: fresh folders, and the fake
// model playing the golden scenario.
func replayGolden(t *testing.T, enginesDir string) (string, error) {
	t.Helper()
	req := engineprobe.ReplayRequest{Engine: "codex", EnginesDir: enginesDir, Key: testKey,
		Dir: t.TempDir(), Cwd: t.TempDir(), Home: t.TempDir()}
	_, req.ModelEndpoint = enginetest.StartFake(t, goldenScenario(t), testKey, map[string]string{"cwd": req.Cwd})
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	return ReplayGolden(ctx, req, proc.BaseEnv())
}
