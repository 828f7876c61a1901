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
	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/jsonrpc"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/wire"
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

// rig is one Copilot session against the fake model server.
type rig struct {
	t    testing.TB
	srv  *fakemodel.Server
	host *enginetest.Host
	eng  *Engine
	opts engine.StartOptions
	cwd  string
	id   string
}

type rigOption func(*rig)

func withWireAPI(api string) rigOption {
	return func(r *rig) { r.opts.Config[ConfigWireAPI] = api }
}

func withCredentials(c map[string]string) rigOption {
	return func(r *rig) { r.opts.Credentials = c }
}

func withTrace(f func(dir jsonrpc.Direction, body []byte)) rigOption {
	return func(r *rig) { r.eng.trace = f }
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
	srv := fakemodel.New(sc, fakemodel.WithVars(map[string]string{"cwd": cwd}))
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r := &rig{t: t, srv: srv, host: enginetest.NewHost(decide), eng: New().(*Engine), cwd: cwd}
	r.opts = engine.StartOptions{
		SessionID:     "corral-test",
		Dir:           filepath.Join(dir, "session"),
		Cwd:           cwd,
		Model:         "gpt-4.1",
		ModelEndpoint: url,
		Config: map[string]string{
			locate.KeyEnginesDir: enginesDir(t),
			ConfigCacheDir:       unpacked.get(t),
		},
		Host:   r.host,
		Env:    []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "LANG=C.UTF-8"},
		Logger: zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// start starts the engine; Close runs at cleanup.
func (r *rig) start() string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	id, err := r.eng.Start(ctx, r.opts)
	if err != nil {
		r.t.Fatalf("Start: %v", err)
	}
	r.t.Cleanup(func() { r.eng.Close() })
	r.id = id
	return id
}

func (r *rig) turn(text string) (engine.TurnResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	return r.eng.Turn(ctx, engine.TurnInput{ID: "m1", Text: text, Kind: "send"})
}

func (r *rig) mustTurn(text string) engine.TurnResult {
	r.t.Helper()
	res, err := r.turn(text)
	if err != nil {
		r.t.Fatalf("Turn(%q): %v", text, err)
	}
	return res
}

// goTurn runs a turn in the background.
func (r *rig) goTurn(text string) <-chan turnOutcome {
	ch := make(chan turnOutcome, 1)
	go func() {
		res, err := r.turn(text)
		ch <- turnOutcome{res, err}
	}()
	return ch
}

type turnOutcome struct {
	res engine.TurnResult
	err error
}

func (r *rig) waitTurn(ch <-chan turnOutcome) turnOutcome {
	r.t.Helper()
	select {
	case out := <-ch:
		return out
	case <-time.After(testWait):
		r.t.Fatal("the turn did not end")
		return turnOutcome{}
	}
}

// waitHeld waits until the fake server holds the named step's answer.
func (r *rig) waitHeld(name string) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	if err := r.srv.WaitHeld(ctx, name); err != nil {
		r.t.Fatal(err)
	}
}

// waitEvent waits for an event of typ whose data satisfies match.
func (r *rig) waitEvent(typ wire.EventType, what string, match func(json.RawMessage) bool) {
	r.t.Helper()
	err := r.host.WaitFor(testWait, what, func(events []enginetest.Event) bool {
		for _, e := range events {
			if e.Type == typ && (match == nil || match(e.Data)) {
				return true
			}
		}
		return false
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// modelRequests are the model requests the fake server answered.
func (r *rig) modelRequests() []fakemodel.Request {
	var out []fakemodel.Request
	for _, req := range r.srv.Requests() {
		if req.API != "" {
			out = append(out, req)
		}
	}
	return out
}

// events decodes the recorded events of typ into a slice of T.
func events[T any](t *testing.T, h *enginetest.Host, typ wire.EventType) []T {
	t.Helper()
	var out []T
	for _, raw := range h.OfType(typ) {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s event %s: %v", typ, raw, err)
		}
		out = append(out, v)
	}
	return out
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

func allow(context.Context, engine.ToolCall) engine.Verdict { return engine.Verdict{Allow: true} }
