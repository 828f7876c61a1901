package claude

import (
	"flag"
	"testing"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden from a fresh run")

// TestGoldenAllowTurn records the protocol of the canonical turn (Write and
// Bash, both allowed) on the newest and the oldest supported CLI: every
// frame the adapter writes, normalised, the kind of every frame the CLI
// writes, with the fields of the frames the adapter answers or reads
// results from, and the stream events of each model call. Each version has
// its golden transcript (testdata/golden/<version>/); a CLI whose protocol
// differs fails here, naming the first frame that changed and its fields.
// Run with -update to record a new version's.
func TestGoldenAllowTurn(t *testing.T) {
	enginetest.OnEachVersion(t, goldenAllowTurn)
}

func goldenAllowTurn(t *testing.T, oldest bool) {
	s := newSession(t, goldenScenario(t), sessionOpts{decide: allowAll, oldest: oldest})
	s.MustTurn(engineprobe.GoldenPrompt)
	if err := s.eng.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := goldenLines(s.traffic.Messages(), goldenReplacements(s.Cwd, s.Dir, s.ConvID))
	if err != nil {
		t.Fatal(err)
	}
	compareGolden(t, s.eng.version, goldenFile, got)
}

// goldenScenario is what the fake model plays for the golden turn.
func goldenScenario(t testing.TB) fakemodel.Scenario {
	return enginetest.GoldenScenario(t, "claude")
}

// compareGolden compares lines with version's golden file, or records it
// under -update.
func compareGolden(t *testing.T, version, file string, got []string) {
	t.Helper()
	if *update {
		if err := golden.Write(version, file, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := golden.Compare(version, file, got); err != nil {
		t.Fatalf("%v\n(rerun with -update if the CLI changed on purpose)", err)
	}
}
