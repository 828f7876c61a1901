package plugin

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// waitLimit bounds every wait in these tests; it is a deadlock guard, not a
// timing goal.
const waitLimit = 30 * time.Second

// Plugin binaries built once for the package's tests.
var bins struct {
	script string // cmd/corral-script-plugin
	test   string // testdata/testplugin
}

func TestMain(m *testing.M) {
	flag.Parse()
	// A fuzz worker runs only a fuzz target, which needs no binary.
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "corral-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins.script = filepath.Join(dir, "corral-script-plugin")
	bins.test = filepath.Join(dir, "testplugin")
	for _, b := range []struct{ out, pkg string }{
		{bins.script, "github.com/corral-dev/corral/cmd/corral-script-plugin"},
		{bins.test, "./testdata/testplugin"},
	} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", b.pkg, err)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// session is a plugin engine under test with a recording host.
type session struct {
	t    *testing.T
	eng  *Engine
	host *enginetest.Host
	dir  string
	cwd  string
}

type sessionOptions struct {
	bin      string
	scenario string
	decide   func(context.Context, engine.ToolCall) engine.Verdict
	env      []string
	creds    map[string]string
	resume   string
	dir      string
}

func scenarioFile(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "scenario.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startSession starts the plugin at o.bin (the script plugin by default).
func startSession(t *testing.T, o sessionOptions) (*session, string, error) {
	t.Helper()
	if o.bin == "" {
		o.bin = bins.script
	}
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	s := &session{t: t, eng: New(o.bin), host: enginetest.NewHost(o.decide), dir: o.dir, cwd: t.TempDir()}
	opts := engine.StartOptions{
		SessionID: "s1", Dir: s.dir, Cwd: s.cwd, Resume: o.resume,
		Env: append(proc.BaseEnv(), o.env...), Credentials: o.creds, Host: s.host,
	}
	if o.scenario != "" {
		opts.Scenario = scenarioFile(t, o.scenario)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	conv, err := s.eng.Start(ctx, opts)
	t.Cleanup(func() { s.eng.Close() })
	return s, conv, err
}

func mustStart(t *testing.T, o sessionOptions) (*session, string) {
	t.Helper()
	s, conv, err := startSession(t, o)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	return s, conv
}

// turnAsync runs a turn in the background.
type turnResult struct {
	res engine.TurnResult
	err error
}

func (s *session) turnAsync(ctx context.Context, text string) <-chan turnResult {
	ch := make(chan turnResult, 1)
	go func() {
		res, err := s.eng.Turn(ctx, engine.TurnInput{ID: "m-" + text, Text: text, Kind: "send"})
		ch <- turnResult{res, err}
	}()
	return ch
}

func (s *session) turn(text string) (engine.TurnResult, error) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	return s.eng.Turn(ctx, engine.TurnInput{ID: "m-" + text, Text: text, Kind: "send"})
}

func await(t *testing.T, ch <-chan turnResult) turnResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(waitLimit):
		t.Fatalf("the turn did not end within %s", waitLimit)
		return turnResult{}
	}
}

// waitType waits until the host recorded n events of typ.
func (s *session) waitType(typ event.Type, n int) {
	s.t.Helper()
	err := s.host.WaitFor(waitLimit, fmt.Sprintf("%d %s events", n, typ), func(evs []enginetest.Event) bool {
		c := 0
		for _, e := range evs {
			if e.Type == typ {
				c++
			}
		}
		return c >= n
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

// pluginPID reads the plugin's pid from the output of a scripted
// "echo plugin-pid=$PPID" (the shell's parent is the plugin).
func (s *session) pluginPID(nth int) int {
	s.t.Helper()
	var pids []int
	for _, raw := range s.host.OfType(event.ToolFinished) {
		fin := decodeJSON[event.ToolFinishedData](s.t, raw)
		var pid int
		if _, err := fmt.Sscanf(strings.TrimSpace(fin.Output), "plugin-pid=%d", &pid); err == nil {
			pids = append(pids, pid)
		}
	}
	if len(pids) <= nth {
		s.t.Fatalf("no plugin pid #%d in the tool output (%d found)", nth, len(pids))
	}
	return pids[nth]
}

func asFailureOf(t *testing.T, err error) *engine.Failure {
	t.Helper()
	var f *engine.Failure
	if !errors.As(err, &f) {
		t.Fatalf("error %v (%T) is not an *engine.Failure", err, err)
	}
	if !errors.Is(err, wire.ErrEngine) {
		t.Fatalf("error %v does not match wire.ErrEngine", err)
	}
	return f
}
