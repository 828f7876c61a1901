package copilot

import (
	"encoding/json"
	"flag"
	"os"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from a run against the real CLI")

// TestGoldenCanonicalTurn pins, on the newest and the oldest supported
// CLI, what the adapter sends for a canonical turn (create a session, send,
// approve a file write, shut down) and which kinds of message it receives,
// so a new CLI version that changes either shows up as a named drift. Each
// version has its transcript in testdata/golden/<version>/. Run with
// -update to accept a change or record a new version.
func TestGoldenCanonicalTurn(t *testing.T) {
	enginetest.OnEachVersion(t, goldenCanonicalTurn)
}

// onOldestCLI points the engine at the oldest supported CLI's install.
func onOldestCLI(t testing.TB) rigOption {
	return func(r *rig) { r.Opts.Config[locate.KeyEnginesDir] = testenv.NeedOldestEngineCLI(t, "copilot") }
}

func goldenCanonicalTurn(t *testing.T, oldest bool) {
	var traffic jsonrpc.Traffic
	opts := []rigOption{withTrace(traffic.Record)}
	if oldest {
		opts = append(opts, onOldestCLI(t))
	}
	r := newRig(t, goldenScenario(t), allow, opts...)
	r.start()
	r.MustTurn(goldenPrompt)
	if err := r.eng.Close(); err != nil {
		t.Fatal(err)
	}
	g, err := renderGolden(traffic.Messages(), r.Opts.ModelEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	compareSent(t, g.version, goldenSent, g.sent)
	compareKinds(t, g.version, goldenReceived, g.received)
}

// goldenScenario is what the fake model plays for the golden turn.
func goldenScenario(t testing.TB) fakemodel.Scenario {
	return enginetest.GoldenScenario(t, "copilot")
}

func compareSent(t *testing.T, version, file string, got []string) {
	t.Helper()
	want := golden(t, version, file, got)
	for i := 0; i < len(got) || i < len(want); i++ {
		switch {
		case i >= len(want):
			t.Errorf("sent message %d is new: %s", i+1, got[i])
		case i >= len(got):
			t.Errorf("sent message %d is no longer sent: %s", i+1, want[i])
		case got[i] != want[i]:
			t.Errorf("sent message %d (%s) drifted:\n got: %s\nwant: %s", i+1, methodOf(want[i]), got[i], want[i])
		}
	}
}

func compareKinds(t *testing.T, version, file string, got []string) {
	t.Helper()
	want := golden(t, version, file, got)
	inWant := map[string]bool{}
	for _, k := range want {
		inWant[k] = true
	}
	for _, k := range got {
		if !inWant[k] {
			t.Errorf("received message kind %q is new", k)
		}
		delete(inWant, k)
	}
	for _, k := range want {
		if inWant[k] {
			t.Errorf("received message kind %q is no longer received", k)
		}
	}
}

// golden returns the lines of version's golden file, first rewriting it
// with got under -update. Without a recording for version it fails,
// naming the nearest recorded version and how got differs from it.
func golden(t *testing.T, version, file string, got []string) []string {
	t.Helper()
	if *update {
		if err := goldenDir.Write(version, file, got); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(goldenDir.Path(version, file))
	if err != nil {
		t.Fatalf("%v (copilot %s: run the test with -update to record it)", goldenDir.Compare(version, file, got), version)
	}
	return transcript.Lines(string(b))
}

func methodOf(line string) string {
	var m rpcMessage
	if json.Unmarshal([]byte(line), &m) != nil || m.Method == "" {
		return "reply"
	}
	return m.Method
}
