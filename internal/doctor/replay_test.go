package doctor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/engineprobe"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testsupervisor"
)

// TestReplayVerdictsFollowTheRunnersReply stages a runner that answers the
// replay request as a real one would, and checks what the doctor makes of
// each answer.
func TestReplayVerdictsFollowTheRunnersReply(t *testing.T) {
	cases := []struct {
		name, reply string
		status      Status
		detail, fix string
	}{
		{"the recorded protocol", `{"engine":"claude","version":"2.1.332","ok":true}`, OK, "2.1.332: the golden turn's protocol is the one recorded", ""},
		{"a drifted protocol", `{"engine":"claude","version":"2.1.340","ok":false,"error":"frame 3 differs: fields gone: x"}`, Fail, "2.1.340: frame 3 differs", "install a supported CLI"},
		{"a version never recorded", `{"engine":"claude","version":"2.1.340","ok":false,"noGolden":true,"error":"no golden transcript recorded for this CLI version (2.1.340); it matches the nearest recorded, 2.1.332"}`, Warn, "matches the nearest", "record this version"},
		{"a runner without the replay", `{"engine":"claude","ok":false,"unknown":true,"error":"this runner cannot replay the claude engine's golden turn"}`, Warn, "cannot replay", "the runner built with this supervisor"},
		{"a runner that answers nonsense", `not json`, Fail, "not a golden replay reply", "check the runner"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := healthy(t)
			dir := t.TempDir()
			runner, reply := filepath.Join(dir, "runner"), filepath.Join(dir, "reply.json")
			if err := os.WriteFile(reply, []byte(tc.reply+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			writeScript(t, runner, "#!/bin/sh\n[ \"$1\" = --replay ] || exit 2\ncat >/dev/null\ncat "+reply+"\n")
			cfg.RunnerPath, cfg.FindRunner = runner, nil
			cfg.Replay = true
			rs := Run(context.Background(), cfg)
			r := result(t, rs, "replay claude")
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) || !strings.Contains(r.Fix, tc.fix) {
				t.Fatalf("%s %q (fix %q); want %s with %q, fix with %q", r.Status, r.Detail, r.Fix, tc.status, tc.detail, tc.fix)
			}
			for _, x := range rs {
				if x.Check == "state folder" || x.Check == "credentials" {
					t.Errorf("doctor engines ran the %s check", x.Check)
				}
			}
		})
	}
}

// TestReplayOnTheInstalledCLIs is `supervisor doctor engines` end to end:
// the built runner replays each engine's golden turn on its pinned CLI
// against the fake model, and the doctor says the CLI is supported.
func TestReplayOnTheInstalledCLIs(t *testing.T) {
	for _, name := range KnownEngines() {
		t.Run(name, func(t *testing.T) {
			enginesDir := testenv.NeedEngineCLI(t, name)
			_, runner := testsupervisor.Binaries(t)
			cfg := Config{Engines: []string{name}, EnginesDir: enginesDir, RunnerPath: runner, Replay: true}
			rs := Run(context.Background(), cfg)
			for _, r := range rs {
				if r.Status != OK {
					t.Errorf("%s: %s %q (fix: %s)", r.Check, r.Status, r.Detail, r.Fix)
				}
			}
			if r := result(t, rs, "replay "+name); !strings.Contains(r.Detail, "frame by frame") {
				t.Errorf("replay %s: %q", name, r.Detail)
			}
		})
	}
}

// TestEveryKnownEngineIsReplayed: each engine the doctor checks has the
// golden scenario its replay serves (the runner's replay of each is
// TestReplayOnTheInstalledCLIs).
func TestEveryKnownEngineIsReplayed(t *testing.T) {
	for _, name := range KnownEngines() {
		if _, ok := engineprobe.GoldenScenario(name); !ok {
			t.Errorf("no golden scenario for %s: supervisor doctor engines would only warn that it cannot replay it", name)
		}
	}
}
