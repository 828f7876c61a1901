package enginetest

import (
	"testing"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/testenv"
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
