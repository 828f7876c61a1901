package doctor

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

// TestInstalledCLIsAreFoundAndSupported runs the engine check against the
// pinned CLIs, each in a fresh home and cache, as on a host that never ran
// them: a first run unpacks an npm CLI (the Copilot CLI about 235 MB), which
// the check waits for instead of failing after the dial timeout.
func TestInstalledCLIsAreFoundAndSupported(t *testing.T) {
	for _, name := range []string{"claude", "codex", "copilot"} {
		t.Run(name, func(t *testing.T) {
			bin := knownEngines[name].bin
			testenv.NeedEngineCLI(t, bin)
			enginesDir, err := testenv.EnginesDir()
			if err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			t.Setenv("HOME", home)
			t.Setenv("XDG_CACHE_HOME", filepath.Join(home, ".cache"))
			t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
			cfg := Config{Engines: []string{name}, EnginesDir: enginesDir}
			cfg.setDefaults()
			r := checkEngine(context.Background(), cfg, name)
			if r.Status != OK {
				t.Fatalf("%s: %s %q (fix: %s)", r.Check, r.Status, r.Detail, r.Fix)
			}
			if !strings.Contains(r.Detail, "pinned") {
				t.Errorf("the check does not say the pinned CLI was found: %q", r.Detail)
			}
			if name != "copilot" && !strings.Contains(r.Detail, "supported") {
				t.Errorf("the check does not say the version is supported: %q", r.Detail)
			}
		})
	}
}
