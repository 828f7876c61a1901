package copilot

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/engine"
)

// testWait bounds every wait in the end-to-end tests. It is a deadline
// against hangs, not a timing goal: the slowest step (a cold CLI start on
// a busy machine) takes a few seconds.
const testWait = 2 * time.Minute

func TestMain(m *testing.M) {
	if mode := os.Getenv(fakeCLIEnv); mode != "" {
		os.Exit(runFakeCLI(mode))
	}
	flag.Parse()
	// The end-to-end tests spend their time waiting on CLI processes, not
	// on this process's CPUs: unless told otherwise, run more of them at
	// once than GOMAXPROCS would.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "test.parallel" })
	if !explicit {
		if err := flag.Set("test.parallel", "6"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

// enginesDir is the repository's pinned npm install of the agent CLIs.
func enginesDir(t testing.TB) string { return testenv.NeedEngineCLI(t, "copilot") }

// unpackedCache is the CLI unpack folder the package's tests share. The
// CLI unpacks about 235 MB into it on first run, which each session would
// otherwise repeat; it is kept between runs of the tests (the CLI keys what
// it unpacks by version) and is owned by the user running them.
type unpackedCache struct {
	once sync.Once
	dir  string
	err  error
}

var unpacked unpackedCache

func (u *unpackedCache) get(t testing.TB) string {
	t.Helper()
	engines := enginesDir(t)
	u.once.Do(func() {
		u.dir = filepath.Join(os.TempDir(), fmt.Sprintf("corral-copilot-unpacked-%d", os.Getuid()))
		if u.err = os.MkdirAll(u.dir, 0o700); u.err != nil {
			return
		}
		fi, err := os.Stat(u.dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			u.err = fmt.Errorf("unpack folder %s: not a private folder of this user", u.dir)
			return
		}
		bin, _, _ := locate.Binary("copilot", map[string]string{locate.KeyEnginesDir: engines})
		cmd := exec.Command(nativeBinary(bin), "--version")
		home := filepath.Join(u.dir, "home")
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CACHE_HOME=" + u.dir, "COPILOT_HOME=" + home}
		out, err := cmd.CombinedOutput()
		if err != nil {
			u.err = errors.New("unpack the CLI: " + err.Error() + ": " + string(out))
		}
	})
	if u.err != nil {
		t.Fatal(u.err)
	}
	return u.dir
}

// rig is one Copilot session against the fake model server: the shared
// engine rig, with the Copilot engine Start started last.
type rig struct {
	*enginetest.Rig
	eng   *Engine
	trace func(dir jsonrpc.Direction, body []byte)
	id    string
}

type rigOption func(*rig)

func withWireAPI(api string) rigOption {
	return func(r *rig) { r.Opts.Config[ConfigWireAPI] = api }
}

func withCredentials(c map[string]string) rigOption {
	return func(r *rig) { r.Opts.Credentials = c }
}

func withTrace(f func(dir jsonrpc.Direction, body []byte)) rigOption {
	return func(r *rig) { r.trace = f }
}

// newRig serves sc on loopback and prepares (not starts) an engine pointed
// at it. decide answers permission requests (nil allows everything).
func newRig(t testing.TB, sc fakemodel.Scenario, decide func(context.Context, engine.ToolCall) engine.Verdict, opts ...rigOption) *rig {
	t.Helper()
	dir := t.TempDir()
	cwd := filepath.Join(dir, "work")
	home := filepath.Join(dir, "home")
	for _, d := range []string{cwd, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	r := &rig{}
	r.Rig = enginetest.NewRig(t, enginetest.RigConfig{
		New:         New,
		Prepare:     func(e engine.Engine) { e.(*Engine).trace = r.trace },
		CLI:         "copilot",
		Scenario:    sc,
		Decide:      decide,
		Model:       goldenModel,
		Env:         []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"},
		Dir:         filepath.Join(dir, "session"),
		Cwd:         cwd,
		TurnTimeout: testWait,
		LogLevel:    zap.WarnLevel,
	})
	r.Opts.SessionID = "corral-test"
	r.Opts.Config[ConfigCacheDir] = unpacked.get(t)
	for _, o := range opts {
		o(r)
	}
	return r
}

// start starts the engine; Close runs at cleanup.
func (r *rig) start() string {
	r.T.Helper()
	eng, id := r.Start("")
	r.eng, r.id = eng.(*Engine), id
	return id
}

// tryStart starts the engine and returns Start's error.
func (r *rig) tryStart() error {
	r.T.Helper()
	eng, id, err := r.TryStart("")
	r.eng, r.id = eng.(*Engine), id
	return err
}

// tool builds a tool call step input.
func toolStep(name, input string) fakemodel.Step {
	return fakemodel.Step{Tools: fakemodel.ToolSet{Default: []fakemodel.ToolCall{{Name: name, Input: json.RawMessage(input)}}}}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var allow = enginetest.AllowAll
