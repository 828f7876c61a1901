package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/locate"
)

// recorder is a testing.TB whose Skip and Fatal end the calling goroutine
// the way the real ones do, recording which was called.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper() {}

func (r *recorder) Skip(args ...any) {
	r.skipped, r.msg = true, fmt.Sprint(args...)
	runtime.Goexit()
}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failed, r.msg = true, fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// run calls f with a recorder on its own goroutine and returns the record.
func run(t *testing.T, f func(tb testing.TB)) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r
}

func TestMissingSkipsOutsideCIAndFailsInCI(t *testing.T) {
	tests := []struct {
		ci       string
		set      bool
		wantFail bool
	}{
		{set: false, wantFail: false},
		{ci: "", set: true, wantFail: false},
		{ci: "false", set: true, wantFail: false},
		{ci: "0", set: true, wantFail: false},
		{ci: "true", set: true, wantFail: true},
		{ci: "1", set: true, wantFail: true},
		{ci: "woodpecker", set: true, wantFail: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("CI=%q set=%v", tt.ci, tt.set), func(t *testing.T) {
			if tt.set {
				t.Setenv(EnvCI, tt.ci)
			} else {
				t.Setenv(EnvCI, "")
				os.Unsetenv(EnvCI)
			}
			r := run(t, func(tb testing.TB) { Missing(tb, "the program tmux", "not on PATH") })
			if r.failed != tt.wantFail || r.skipped == tt.wantFail {
				t.Fatalf("failed=%v skipped=%v, want failed=%v", r.failed, r.skipped, tt.wantFail)
			}
			for _, want := range []string{"the program tmux", "not on PATH", "make deps"} {
				if !strings.Contains(r.msg, want) {
					t.Errorf("message %q does not say %q", r.msg, want)
				}
			}
		})
	}
}

func TestNeedProgramFindsWhatIsOnPath(t *testing.T) {
	t.Setenv(EnvCI, "true")
	dir := t.TempDir()
	prog := filepath.Join(dir, "corral-test-tool")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var got string
	r := run(t, func(tb testing.TB) { got = NeedProgram(tb, "corral-test-tool") })
	if r.failed || r.skipped || got != prog {
		t.Fatalf("NeedProgram = %q (failed=%v skipped=%v %s), want %q", got, r.failed, r.skipped, r.msg, prog)
	}
	r = run(t, func(tb testing.TB) { NeedProgram(tb, "corral-no-such-tool") })
	if !r.failed || !strings.Contains(r.msg, "corral-no-such-tool") {
		t.Fatalf("a missing program in CI: failed=%v %q", r.failed, r.msg)
	}
}

func TestNeedEngineCLIWantsThePinnedInstall(t *testing.T) {
	t.Setenv(EnvCI, "")
	engines := t.TempDir()
	bin := filepath.Join(engines, "node_modules", ".bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "agent"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "notexec"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(locate.EnvEnginesDir, engines)
	// A CLI of the same name on PATH does not count.
	t.Setenv("PATH", bin)

	var got string
	r := run(t, func(tb testing.TB) { got = NeedEngineCLI(tb, "agent") })
	if r.skipped || r.failed || got != engines {
		t.Fatalf("NeedEngineCLI = %q (%s), want %q", got, r.msg, engines)
	}
	for _, name := range []string{"other", "notexec"} {
		r = run(t, func(tb testing.TB) { NeedEngineCLI(tb, name) })
		if !r.skipped || !strings.Contains(r.msg, "pinned "+name+" CLI") {
			t.Errorf("NeedEngineCLI(%s): skipped=%v %q", name, r.skipped, r.msg)
		}
	}
}

func TestEnginesDirDefaultsToTheModulesDeployFolder(t *testing.T) {
	t.Setenv(locate.EnvEnginesDir, "")
	dir, err := EnginesDir()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if dir != filepath.Join(root, "deploy", "engines") {
		t.Fatalf("EnginesDir = %s", dir)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
}
