// Package fakerunner is a stand-in for the runner binary, left to the
// MirrorToSSE benchmark alone (a burst of events faster than the script
// engine streams them). Every test runs the real runner
// (internal/testrunner); the terminal modes below are no longer used. A
// test binary re-executes itself as the child and calls Main. It speaks
// the real protocol and keeps a real events.jsonl and runner.pid, and it
// misbehaves as the Mode constants say, set through the CORRAL_FAKE_RUNNER
// environment variable (comma-separated).
package fakerunner

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// EnvVar selects the fake's behaviour; Main runs only when it is set.
const EnvVar = "CORRAL_FAKE_RUNNER"

// Modes, set in EnvVar.
const (
	// ModeOn just runs the fake.
	ModeOn = "on"
	// ModeCrashOnSend writes to stderr and exits 3 when a send arrives.
	ModeCrashOnSend = "crash-on-send"
	// ModeTermFrames sends term.data as binary frames when hello asks for
	// them, as the real runner does.
	ModeTermFrames = "term-frames"
	// ModeBadFrames, with frames, writes a frame of an unknown kind before
	// each term.data: a frame the supervisor must skip.
	ModeBadFrames = "bad-frames"
	// ModeBrokenFrame, with frames, answers the terminal input "break\n"
	// with a frame whose last byte is not the newline its lengths promise.
	ModeBrokenFrame = "broken-frame"
)

// BurstPrefix in a send's text ("burst 1000") makes the fake emit that many
// assistantDelta events as fast as it can, then end the turn.
const BurstPrefix = "burst "

// Main runs the fake runner with the runner's arguments.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("session-dir", "", "session folder")
	stdio := fs.Bool("stdio", false, "speak the protocol on stdin/stdout")
	// Terminals are never handed over: the supervisor falls back to their
	// output on the link, which is what the fake runner plays.
	fs.Int("term-fds", -1, "ignored")
	fs.String("log-level", "info", "ignored")
	fs.String("log-format", "json", "ignored")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *dir == "" || !*stdio {
		fmt.Fprintln(stderr, "fake runner: --session-dir and --stdio are required")
		return 2
	}
	r := &runner{
		dir:   *dir,
		modes: parseModes(os.Getenv(EnvVar)),
		out:   bufio.NewWriter(stdout),
		errw:  stderr,
	}
	if err := r.open(); err != nil {
		fmt.Fprintln(stderr, "fake runner:", err)
		return 1
	}
	defer r.log.Close()
	return r.serve(stdin)
}

func parseModes(s string) map[string]bool {
	m := map[string]bool{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			m[f] = true
		}
	}
	return m
}

type runner struct {
	dir   string
	modes map[string]bool
	errw  io.Writer

	outMu  sync.Mutex
	out    *bufio.Writer
	frames bool // hello asked for terminal frames, and ModeTermFrames is on

	mu      sync.Mutex
	log     *os.File
	session string
	engine  string
	seq     int64
	turn    int
	wg      sync.WaitGroup
}

func (r *runner) open() error {
	spec := wire.Spec{}
	if raw, err := os.ReadFile(filepath.Join(r.dir, "meta.json")); err == nil {
		_ = json.Unmarshal(raw, &spec)
	}
	r.session, r.engine = spec.ID, spec.Engine
	if r.session == "" {
		r.session = filepath.Base(r.dir)
	}
	if err := r.openLog(r.dir); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(r.dir, "runner.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600)
}

// openLog opens dir's events.jsonl, cutting a torn last line, and finds the
// last seq.
func (r *runner) openLog(dir string) error {
	path := filepath.Join(dir, "events.jsonl")
	raw, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	end := strings.LastIndexByte(string(raw), '\n') + 1
	r.seq = 0
	for _, line := range strings.Split(string(raw[:end]), "\n") {
		var ev struct {
			Seq int64 `json:"seq"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil && ev.Seq > r.seq {
			r.seq = ev.Seq
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(int64(end)); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Seek(int64(end), io.SeekStart); err != nil {
		f.Close()
		return err
	}
	r.log = f
	return nil
}

func (r *runner) serve(stdin io.Reader) int {
	dec := wire.NewDecoder(stdin, 0)
	for {
		msg, reqID, err := dec.Decode()
		var le *wire.LineError
		if errors.As(err, &le) {
			fmt.Fprintln(r.errw, "fake runner: skipping line:", le)
			continue
		}
		if err != nil {
			// The supervisor is gone.
			r.wg.Wait()
			return 0
		}
		switch m := msg.(type) {
		case *wire.Hello:
			r.outMu.Lock()
			r.frames = m.TermFrames && r.modes[ModeTermFrames]
			r.outMu.Unlock()
			r.write("", &wire.Ready{Proto: wire.ProtocolVersion, Session: r.session, TermFrames: r.frames})
		case *wire.LiveEnsure:
			typ := event.SessionStarted
			if r.seq > 0 {
				typ = event.SessionResumed
			}
			r.emit(typ, event.SessionStartedData{Engine: m.Spec.Engine, Cwd: m.Spec.Cwd, Mode: m.Spec.Mode})
			r.write("", &wire.StateReport{State: wire.StateIdle})
			r.write(reqID, &wire.LiveReady{Session: r.session})
		case *wire.Command:
			r.command(reqID, m)
		case *wire.TermOpen:
			// It never hands a terminal over.
			r.write(reqID, &wire.TermOpened{TermID: m.TermID, ClientID: m.ClientID, Role: "owner", Cols: m.Cols, Rows: m.Rows})
			r.write("", &wire.TermData{TermID: m.TermID, ClientID: m.ClientID, Data: []byte("$ ")})
		case *wire.TermInput:
			switch string(m.Data) {
			case "exit\n":
				code := 0
				r.write("", &wire.TermExit{TermID: m.TermID, ClientID: m.ClientID, ExitCode: &code})
			case "break\n":
				if r.modes[ModeBrokenFrame] {
					frame, _ := wire.AppendTermFrame(nil, m.TermID, m.ClientID, []byte("broken"))
					frame[len(frame)-1] = 'x'
					r.writeRaw(append(frame, "and then whatever\n"...))
				}
			default:
				// Echo, as a terminal would.
				r.write("", &wire.TermData{TermID: m.TermID, ClientID: m.ClientID, Data: m.Data})
			}
		case *wire.TermResize, *wire.TermClose, *wire.TermAck:
		case *wire.Shutdown:
			r.wg.Wait()
			r.write(reqID, &wire.Bye{})
			return 0
		default:
			fmt.Fprintln(r.errw, "fake runner: unexpected message", msg.Type())
		}
	}
}
