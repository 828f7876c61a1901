package enginetest

import (
	"context"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/transcript"
)

// GoldenScenario is what the fake model plays for engine's golden turn
// (engineprobe.GoldenScenario, which the doctor serves for a replay).
func GoldenScenario(t testing.TB, engine string) fakemodel.Scenario {
	t.Helper()
	raw, ok := engineprobe.GoldenScenario(engine)
	if !ok {
		t.Fatalf("no golden scenario for %s", engine)
	}
	sc, err := fakemodel.ParseScenario(raw)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// ReplayOnEachVersion runs replay, an engine's golden replay as
// `supervisor doctor engines` runs it, on the newest and the oldest pinned
// CLI (skipping, or failing in CI, when one is missing): each must match
// its recorded transcript and say its version.
func ReplayOnEachVersion(t *testing.T, cli string, replay func(t *testing.T, enginesDir string) (version string, err error)) {
	OnEachVersion(t, func(t *testing.T, oldest bool) {
		version, err := replay(t, EnginesDir(t, cli, oldest))
		if err != nil {
			t.Fatalf("replay on %s: %v", version, err)
		}
		if version == "" {
			t.Fatal("the replay did not say the CLI's version")
		}
	})
}

// EnginesDir is the engines folder of the newest or the oldest pinned cli
// (the test skips, or fails in CI, when it is missing).
func EnginesDir(t testing.TB, cli string, oldest bool) string {
	t.Helper()
	if oldest {
		return testenv.NeedOldestEngineCLI(t, cli)
	}
	return testenv.NeedEngineCLI(t, cli)
}

// GoldenReplay is an engine's golden replay (engineprobe.Replay) under
// test, played as the doctor plays it.
type GoldenReplay struct {
	// CLI names the engine, its pinned CLI and its golden scenario.
	CLI string
	// Key is the credential the replay hands the CLI and the only one the
	// fake model accepts.
	Key string
	// Replay is the engine's replay.
	Replay engineprobe.Replay
	// Timeout bounds a replay; zero: none but the test's own.
	Timeout time.Duration
	// Embedded is the package's embedded transcripts, which Replay
	// compares with; Drifted swaps them for the test.
	Embedded *transcript.Golden
}

// Run replays on the CLI in enginesDir as the doctor does: fresh folders,
// the base environment, and the fake model playing the golden scenario.
func (g GoldenReplay) Run(t *testing.T, enginesDir string) (version string, err error) {
	t.Helper()
	req := engineprobe.ReplayRequest{Engine: g.CLI, EnginesDir: enginesDir, Key: g.Key,
		Dir: t.TempDir(), Cwd: t.TempDir(), Home: t.TempDir()}
	_, req.ModelEndpoint = StartFake(t, GoldenScenario(t, g.CLI), g.Key, map[string]string{"cwd": req.Cwd})
	ctx := context.Background()
	if g.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, g.Timeout)
		defer cancel()
	}
	return g.Replay(ctx, req, proc.BaseEnv())
}

// OnEachVersion replays on the newest and the oldest pinned CLI: both
// match their recorded transcript (ReplayOnEachVersion).
func (g GoldenReplay) OnEachVersion(t *testing.T) { ReplayOnEachVersion(t, g.CLI, g.Run) }

// Drift changes one recorded transcript: in File (one of Files, the files
// of a version's transcript), the first Old becomes New.
type Drift struct {
	Files          []string
	File, Old, New string
	// Frame is the first differing frame the replay must name, and Named
	// what of the drifted field it must show.
	Frame int
	Named string
}

// Drifted replays on the newest pinned CLI, then against its recorded
// transcript changed by d: the second replay must fail naming the frame and
// the field.
func (g GoldenReplay) Drifted(t *testing.T, d Drift) {
	t.Helper()
	dir := EnginesDir(t, g.CLI, false)
	version, err := g.Run(t, dir)
	if err != nil {
		t.Fatalf("replay on %s: %v", version, err)
	}
	files := fstest.MapFS{}
	for _, f := range d.Files {
		raw, err := fs.ReadFile(g.Embedded.FS, path.Join(g.Embedded.Dir, version, f))
		if err != nil {
			t.Fatal(err)
		}
		files[path.Join("golden", version, f)] = &fstest.MapFile{Data: raw}
	}
	drift := files[path.Join("golden", version, d.File)]
	if drift == nil {
		t.Fatalf("%s is not among the transcript's files %q", d.File, d.Files)
	}
	drifted := strings.Replace(string(drift.Data), d.Old, d.New, 1)
	if drifted == string(drift.Data) {
		t.Fatalf("the recorded %s has no %s", d.File, d.Old)
	}
	drift.Data = []byte(drifted)
	saved := *g.Embedded
	t.Cleanup(func() { *g.Embedded = saved })
	*g.Embedded = transcript.Golden{Dir: "golden", FS: files}
	_, err = g.Run(t, dir)
	frame := "frame " + strconv.Itoa(d.Frame) + " "
	if err == nil || !strings.Contains(err.Error(), frame) || !strings.Contains(err.Error(), d.Named) {
		t.Fatalf("replay against a drifted transcript: %v; want %sand %s named", err, frame, d.Named)
	}
}
