// Package fakerunner is a stand-in for the runner binary in the
// supervisor's tests: a test binary re-executes itself as the child and
// calls Main. It speaks the real protocol and keeps a real events.jsonl,
// runner.pid and presence.json, and it can misbehave on demand, as listed in
// the Mode constants, set through the CORRAL_FAKE_RUNNER environment
// variable (comma-separated).
package fakerunner

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// EnvVar selects the fake's behaviour; Main runs only when it is set.
const EnvVar = "CORRAL_FAKE_RUNNER"

// Modes, set in EnvVar.
const (
	// ModeOn just runs the fake.
	ModeOn = "on"
	// ModeProtoPrefix + N answers hello with protocol version N.
	ModeProtoPrefix = "proto="
	// ModeGarbage writes malformed and oversized lines before each reply.
	ModeGarbage = "garbage"
	// ModeCrashOnSend writes to stderr and exits 3 when a send arrives.
	ModeCrashOnSend = "crash-on-send"
	// ModeHangShutdown ignores shutdown and SIGTERM.
	ModeHangShutdown = "hang-shutdown"
	// ModeSlowTurn keeps each turn open until stop.
	ModeSlowTurn = "slow-turn"
	// ModeAsk opens an ask in each turn and waits for its answer.
	ModeAsk = "ask"
	// ModeFailStart refuses live.ensure.
	ModeFailStart = "fail-start"
	// ModeSilent never answers hello.
	ModeSilent = "silent"
	// ModeReadyDelayPrefix + a duration delays the answer to hello.
	ModeReadyDelayPrefix = "ready-delay="
	// ModeNotLiveOnce answers the first command with notLive.
	ModeNotLiveOnce = "notlive-once"
	// ModeIgnoreCommand never answers a command other than status and
	// getGoal.
	ModeIgnoreCommand = "ignore-command"
	// ModeNoTerminal refuses term.open with term.error.
	ModeNoTerminal = "no-terminal"
	// ModeTermFrames sends term.data as binary frames when hello asks for
	// them, as the real runner does.
	ModeTermFrames = "term-frames"
	// ModeBadFrames, with frames, writes a frame of an unknown kind before
	// each term.data: a frame the supervisor must skip.
	ModeBadFrames = "bad-frames"
	// ModeBrokenFrame, with frames, answers the terminal input "break\n"
	// with a frame whose last byte is not the newline its lengths promise.
	ModeBrokenFrame = "broken-frame"
	// ModeLogLines writes LogLines to stderr when a session opens, as the
	// runner's logger would, and a line that is no log entry.
	ModeLogLines = "log-lines"
)

// LogLines are what ModeLogLines writes: a runner's JSON log entries at
// debug, info, warn and error, then a line that is no JSON.
var LogLines = []string{
	`{"level":"debug","ts":1.5,"caller":"runner/x.go:1","msg":"fake debug","n":1}`,
	`{"level":"info","ts":1.5,"caller":"runner/x.go:2","msg":"fake info","n":2}`,
	`{"level":"warn","ts":1.5,"caller":"runner/x.go:3","msg":"fake warning","n":3,"detail":{"why":"testing"}}`,
	`{"level":"error","ts":1.5,"caller":"runner/x.go:4","msg":"fake error","n":4}`,
	`not a log entry`,
}

// SpawnLog is the file in the session folder where each start appends a
// line, so tests can count starts.
const SpawnLog = "spawns.log"

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
		stop:  make(chan struct{}, 1),
		ans:   make(chan string, 1),
	}
	if r.modes[ModeHangShutdown] {
		signal.Ignore(syscall.SIGTERM)
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

func (r *runner) modeValue(prefix string) string {
	for k := range r.modes {
		if strings.HasPrefix(k, prefix) {
			return strings.TrimPrefix(k, prefix)
		}
	}
	return ""
}

type runner struct {
	dir   string
	modes map[string]bool
	errw  io.Writer

	outMu  sync.Mutex
	out    *bufio.Writer
	frames bool // hello asked for terminal frames, and ModeTermFrames is on

	mu       sync.Mutex
	log      *os.File
	session  string
	engine   string
	seq      int64
	working  bool
	turn     int
	asks     []string
	queued   []event.Queued
	notLive  bool
	commands int

	stop chan struct{}
	ans  chan string
	wg   sync.WaitGroup

	reportMu   sync.Mutex // orders state reports as their snapshots were taken
	lastReport wire.StateReport
	reported   bool
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
	if err := os.WriteFile(filepath.Join(r.dir, "runner.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(r.dir, SpawnLog), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	fmt.Fprintln(f, os.Getpid())
	return f.Close()
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
	if r.log != nil {
		r.log.Close()
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
		if r.modes[ModeGarbage] {
			r.writeRaw([]byte("this is not json\n{\"no\":\"t\"}\n" + `{"t":"mirror","seq":"x"}` + "\n" + strings.Repeat("x", 4096) + "\n"))
		}
		switch m := msg.(type) {
		case *wire.Hello:
			if r.modes[ModeSilent] {
				continue
			}
			if d, err := time.ParseDuration(r.modeValue(ModeReadyDelayPrefix)); err == nil {
				time.Sleep(d)
			}
			proto := wire.ProtocolVersion
			if v := r.modeValue(ModeProtoPrefix); v != "" {
				proto, _ = strconv.Atoi(v)
			}
			r.outMu.Lock()
			r.frames = m.TermFrames && r.modes[ModeTermFrames]
			r.outMu.Unlock()
			r.write("", &wire.Ready{Proto: proto, Session: r.session, TermFrames: r.frames})
		case *wire.LiveEnsure:
			if r.modes[ModeFailStart] {
				fmt.Fprintln(r.errw, "fake runner: engine refused to start")
				r.write(reqID, &wire.LiveReady{Error: wire.Errorf(wire.CodeEngineError, "engine %q refused to start", m.Spec.Engine)})
				continue
			}
			typ := event.SessionStarted
			if r.seq > 0 {
				typ = event.SessionResumed
			}
			r.emit(typ, event.SessionStartedData{Engine: m.Spec.Engine, Cwd: m.Spec.Cwd, Mode: m.Spec.Mode})
			if len(m.Credentials) > 0 {
				// Prove they arrived without ever writing them down.
				names := make([]string, 0, len(m.Credentials))
				for k := range m.Credentials {
					names = append(names, k)
				}
				fmt.Fprintln(r.errw, "fake runner: credentials received:", strings.Join(names, ","))
			}
			if r.modes[ModeLogLines] {
				for _, line := range LogLines {
					fmt.Fprintln(r.errw, line)
				}
			}
			r.mu.Lock()
			r.notLive = r.modes[ModeNotLiveOnce] && r.commands == 0
			r.mu.Unlock()
			r.reportState()
			r.write(reqID, &wire.LiveReady{Session: r.session})
		case *wire.Command:
			r.command(reqID, m)
		case *wire.TermOpen:
			if r.modes[ModeNoTerminal] {
				r.write(reqID, &wire.TermOpened{TermID: m.TermID, ClientID: m.ClientID,
					Error: wire.Errorf(wire.CodeUnavailable, "this runner has no terminal support")})
				continue
			}
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
			if r.modes[ModeHangShutdown] {
				continue
			}
			r.interruptTurn()
			r.wg.Wait()
			r.writePresence()
			r.write(reqID, &wire.Bye{})
			return 0
		default:
			fmt.Fprintln(r.errw, "fake runner: unexpected message", msg.Type())
		}
	}
}
