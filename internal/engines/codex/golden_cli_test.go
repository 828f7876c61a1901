package codex

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/transcript"
)

var update = flag.Bool("update", false, "rewrite the golden transcripts in testdata/golden")

// The canonical turn, on the newest and the oldest supported CLI: a
// command the gate allows, then a patch it refuses (so the feedback steer
// and the decline are in it), then the answer.
func TestGoldenCanonicalTurn(t *testing.T) {
	enginetest.OnEachVersion(t, goldenCanonicalTurn)
}

func goldenCanonicalTurn(t *testing.T, oldest bool) {
	r := newRigOn(t, oldest, goldenScenario(t), goldenDecide)
	var rec jsonrpc.Traffic
	eng := New().(*Engine)
	eng.trace = rec.Record
	ctx, cancel := context.WithTimeout(context.Background(), turnDeadline)
	defer cancel()
	if _, err := eng.Start(ctx, r.Opts); err != nil {
		t.Fatalf("Start: %v", describe(err))
	}
	r.eng, r.Eng = eng, eng
	r.MustTurn(goldenPrompt)
	eng.Close()

	got := normaliseTranscript(rec.Messages(), goldenPaths(r.Cwd, r.Dir))
	path := golden.Path(eng.cliVersion, goldenFile)
	if *update {
		if err := golden.Write(eng.cliVersion, goldenFile, transcript.Lines(got)); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		near := transcript.Nearest(golden.Versions(), eng.cliVersion)
		if near == "" {
			t.Fatalf("no golden transcript for codex %s: %v (run go test -run TestGoldenCanonicalTurn -update to record it)", eng.cliVersion, err)
		}
		drift := compareTranscripts(readGolden(t, golden.Path(near, goldenFile)), got)
		t.Fatalf("no golden transcript for codex %s (run with -update to record it); against the nearest recorded, %s:\n%s", eng.cliVersion, near, orSame(drift))
	}
	if drift := compareTranscripts(string(want), got); drift != "" {
		t.Fatalf("the protocol of codex %s drifted from %s:\n%s\n(if the change is expected, rerun with -update)", eng.cliVersion, path, drift)
	}
}

// goldenScenario is what the fake model plays for the golden turn.
func goldenScenario(t testing.TB) fakemodel.Scenario {
	return enginetest.GoldenScenario(t, "codex")
}

func readGolden(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func orSame(drift string) string {
	if drift == "" {
		return "no drift"
	}
	return drift
}

// compareTranscripts names the first sent message that drifted and every
// received kind that appeared, vanished or changed its fields.
func compareTranscripts(want, got string) string {
	split := func(s string) (sent []string, recv map[string]string) {
		recv = map[string]string{}
		for _, l := range strings.Split(s, "\n") {
			switch {
			case strings.HasPrefix(l, "> "):
				sent = append(sent, l[2:])
			case strings.HasPrefix(l, "< "):
				label, keys, _ := strings.Cut(l[2:], ": ")
				recv[label] = keys
			}
		}
		return sent, recv
	}
	wantSent, wantRecv := split(want)
	gotSent, gotRecv := split(got)
	var d []string
	for i := 0; i < len(wantSent) || i < len(gotSent); i++ {
		var w, g string
		if i < len(wantSent) {
			w = wantSent[i]
		}
		if i < len(gotSent) {
			g = gotSent[i]
		}
		if w != g {
			d = append(d, fmt.Sprintf("sent message #%d (%s) drifted:\n  want %s\n  got  %s", i+1, sentMethod(w, g), w, g))
			break
		}
	}
	var labels []string
	for l := range wantRecv {
		labels = append(labels, l)
	}
	for l := range gotRecv {
		if _, ok := wantRecv[l]; !ok {
			labels = append(labels, l)
		}
	}
	sort.Strings(labels)
	for _, l := range labels {
		w, inWant := wantRecv[l]
		g, inGot := gotRecv[l]
		switch {
		case !inGot:
			d = append(d, fmt.Sprintf("received %q no longer arrives", l))
		case !inWant:
			d = append(d, fmt.Sprintf("received %q is new", l))
		case w != g:
			added, removed := setDiff(strings.Fields(g), strings.Fields(w)), setDiff(strings.Fields(w), strings.Fields(g))
			d = append(d, fmt.Sprintf("received %q changed its fields: added %v, removed %v", l, added, removed))
		}
	}
	return strings.Join(d, "\n")
}

func sentMethod(lines ...string) string {
	for _, l := range lines {
		if m, err := jsonrpc.ParseMessage([]byte(l)); err == nil {
			if m.Method != "" {
				return m.Method
			}
			return "reply to server request " + string(m.ID)
		}
	}
	return "?"
}

func setDiff(a, b []string) []string {
	in := map[string]bool{}
	for _, x := range b {
		in[x] = true
	}
	var out []string
	for _, x := range a {
		if !in[x] {
			out = append(out, x)
		}
	}
	return out
}
