package testrunner

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// The environment that makes a test binary a fault: which one, and the real
// runner it stands in front of.
const (
	faultVar  = "CORRAL_TEST_RUNNER_FAULT"
	runnerVar = "CORRAL_TEST_RUNNER"
)

// Fault is one way to misbehave. Those that end in "=" take a value.
type Fault string

// Faults. Each changes one thing; everything else is the real runner's.
const (
	// CrashOnSend writes CrashWords to stderr and exits 3 when a send
	// command arrives, before the runner sees it.
	CrashOnSend Fault = "crash-on-send"
	// IgnoreCommand never passes on a command other than getStatus and
	// getGoal, so none is answered.
	IgnoreCommand Fault = "ignore-command"
	// NotLiveOnce answers the first command with outcome notLive.
	NotLiveOnce Fault = "notlive-once"
	// NoTerminal refuses term.open as a runner without terminals would.
	NoTerminal Fault = "no-terminal"
	// Garbage writes malformed and oversized lines before each line the
	// runner writes.
	Garbage Fault = "garbage"
	// HangShutdown passes on neither shutdown nor SIGTERM, and stays when
	// the runner has gone.
	HangShutdown Fault = "hang-shutdown"
	// LogLines writes LogLinesWritten to stderr when a session opens.
	LogLines Fault = "log-lines"
	// Credentials writes CredentialsReceived, the engine and the names of
	// the credentials live.ensure carries (never their values), to stderr
	// before passing live.ensure on.
	Credentials Fault = "credentials"
	// Silent starts no runner and never answers hello.
	Silent Fault = "silent"
	// ProtoPrefix + N starts no runner and answers hello with protocol
	// version N.
	ProtoPrefix Fault = "proto="
	// ReadyDelayPrefix + a duration holds hello that long before passing
	// it on, so that concurrent callers meet one start.
	ReadyDelayPrefix Fault = "ready-delay="
	// NoFrames passes hello on without its ask for terminal frames, so
	// the runner sends term.data as JSON lines, as an older runner would.
	NoFrames Fault = "no-frames"
	// BadFrames writes a terminal frame of an unknown kind before each
	// frame the runner writes: a frame the supervisor must skip.
	BadFrames Fault = "bad-frames"
	// BrokenFrame answers the terminal input BreakInput, which the runner
	// never gets, with a frame whose last byte is not the newline its
	// lengths promise, followed by BrokenFrameWords.
	BrokenFrame Fault = "broken-frame"
)

// BreakInput is the terminal input BrokenFrame acts on.
const BreakInput = "break\n"

// BrokenFrameWords are what BrokenFrame writes in and after its broken
// frame; none of them may reach a client.
var BrokenFrameWords = []string{"broken", "and then whatever"}

// CredentialsReceived starts the line Credentials writes:
// "credentials received for ENGINE: NAME,NAME".
const CredentialsReceived = "credentials received for "

// CrashWords are what CrashOnSend writes to stderr before it exits.
var CrashWords = []string{"panic: engine exploded", "goroutine 1 [running]"}

// LogLinesWritten are what LogLines writes: a runner's JSON log entries at
// debug, info, warn and error, then a line that is no JSON.
var LogLinesWritten = []string{
	`{"level":"debug","ts":1.5,"caller":"runner/x.go:1","msg":"fake debug","n":1}`,
	`{"level":"info","ts":1.5,"caller":"runner/x.go:2","msg":"fake info","n":2}`,
	`{"level":"warn","ts":1.5,"caller":"runner/x.go:3","msg":"fake warning","n":3,"detail":{"why":"testing"}}`,
	`{"level":"error","ts":1.5,"caller":"runner/x.go:4","msg":"fake error","n":4}`,
	`not a log entry`,
}

// Env is the environment (for the supervisor's Config.Env) that makes the
// runner path os.Args[0] the fault f in front of the real runner.
func Env(runner string, f Fault) []string {
	return []string{faultVar + "=" + string(f), runnerVar + "=" + runner,
		// A race-enabled test binary otherwise sleeps a second at exit.
		"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}
}

// IsFault reports whether this process was started as a fault; TestMain
// then calls Main instead of running tests.
func IsFault() bool { return os.Getenv(faultVar) != "" }

// Main runs the fault named in the environment with the runner's
// arguments and returns the exit status.
func Main(args []string) int {
	f := Fault(os.Getenv(faultVar))
	p := &proxy{fault: f, out: os.Stdout}
	// The supervisor signals the whole process group; the runner below
	// shuts down on its own and this process follows it.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGTERM)
	switch {
	case f == Silent:
		io.Copy(io.Discard, os.Stdin)
		return 0
	case strings.HasPrefix(string(f), string(ProtoPrefix)):
		return p.answerHello(strings.TrimPrefix(string(f), string(ProtoPrefix)))
	}
	return p.run(os.Getenv(runnerVar), args)
}

type proxy struct {
	fault Fault

	mu       sync.Mutex // orders writes to out
	out      io.Writer
	commands int
}

// answerHello answers hello with protocol version v, then waits for the
// supervisor to hang up.
func (p *proxy) answerHello(v string) int {
	proto, err := strconv.Atoi(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault: bad protocol version", v)
		return 2
	}
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadBytes('\n'); err != nil {
		return 0
	}
	p.write("", &wire.Ready{Proto: proto})
	io.Copy(io.Discard, in)
	return 0
}

func (p *proxy) run(runner string, args []string) int {
	cmd := exec.Command(runner, args...)
	cmd.Stderr = os.Stderr
	proc.DieWithParent(cmd)
	// The terminal descriptor hand-over (--term-fds 3) passes through.
	for i, a := range args {
		if a == "--term-fds" && i+1 < len(args) && args[i+1] == "3" {
			cmd.ExtraFiles = []*os.File{os.NewFile(3, "term-fds")}
		}
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return p.fail(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return p.fail(err)
	}
	if err := cmd.Start(); err != nil {
		return p.fail(err)
	}
	go func() {
		p.copyIn(stdin)
		stdin.Close()
	}()
	// The runner's output ends as it exits; so does this process, which
	// is the runner as far as the supervisor knows.
	p.copyOut(stdout)
	err = cmd.Wait()
	if p.fault == HangShutdown {
		// Stay until killed. (A bare select{} would be a deadlock the
		// runtime ends once stdin is closed.)
		for {
			time.Sleep(time.Hour)
		}
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		return p.fail(err)
	}
	return 0
}

func (p *proxy) fail(err error) int {
	fmt.Fprintln(os.Stderr, "fault:", err)
	return 1
}

// copyIn passes the supervisor's lines on to the runner, but for the one
// the fault acts on.
func (p *proxy) copyIn(runner io.Writer) {
	in := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if line = p.pass(line); line == nil {
				continue
			}
			if _, werr := runner.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pass acts on one line from the supervisor and returns what the runner
// gets instead: the line itself, another, or nil for nothing.
func (p *proxy) pass(line []byte) []byte {
	msg, reqID, err := wire.NewDecoder(bytes.NewReader(line), 0).Decode()
	if err != nil {
		return line
	}
	if !p.passMessage(reqID, msg) {
		return nil
	}
	if h, ok := msg.(*wire.Hello); ok && p.fault == NoFrames && h.TermFrames {
		h.TermFrames = false
		if plain, err := wire.AppendMessage(nil, reqID, h); err == nil {
			return plain
		}
	}
	return line
}

// passMessage acts on one message from the supervisor and says whether the
// runner gets it.
func (p *proxy) passMessage(reqID string, msg wire.Message) bool {
	switch m := msg.(type) {
	case *wire.Hello:
		if d, err := time.ParseDuration(strings.TrimPrefix(string(p.fault), string(ReadyDelayPrefix))); err == nil {
			time.Sleep(d)
		}
	case *wire.LiveEnsure:
		if p.fault == Credentials {
			names := slices.Sorted(maps.Keys(m.Credentials))
			fmt.Fprintf(os.Stderr, "%s%s: %s\n", CredentialsReceived, m.Spec.Engine, strings.Join(names, ","))
		}
		if p.fault == LogLines {
			for _, l := range LogLinesWritten {
				fmt.Fprintln(os.Stderr, l)
			}
		}
	case *wire.Command:
		p.commands++
		if p.fault == NotLiveOnce && p.commands == 1 {
			p.write(reqID, &wire.CommandReply{Outcome: wire.OutcomeNotLive})
			return false
		}
		req, err := command.Decode(m.Command)
		if err != nil {
			return true
		}
		switch req.(type) {
		case command.Send:
			if p.fault == CrashOnSend {
				for _, w := range CrashWords {
					fmt.Fprintln(os.Stderr, "fault:", w)
				}
				os.Exit(3)
			}
			return p.fault != IgnoreCommand
		case command.GetStatus, command.GetGoal:
		default:
			return p.fault != IgnoreCommand
		}
	case *wire.TermInput:
		if p.fault == BrokenFrame && string(m.Data) == BreakInput {
			frame, _ := wire.AppendTermFrame(nil, m.TermID, m.ClientID, []byte(BrokenFrameWords[0]))
			frame[len(frame)-1] = 'x'
			p.writeRaw(append(frame, BrokenFrameWords[1]+"\n"...))
			return false
		}
	case *wire.TermOpen:
		if p.fault == NoTerminal {
			p.write(reqID, &wire.TermOpened{TermID: m.TermID, ClientID: m.ClientID,
				Error: wire.Errorf(wire.CodeUnavailable, "this runner has no terminal support")})
			return false
		}
	case *wire.Shutdown:
		return p.fault != HangShutdown
	}
	return true
}

// garbage is what Garbage writes before each of the runner's lines.
var garbage = []byte("this is not json\n{\"no\":\"t\"}\n" + `{"t":"mirror","seq":"x"}` + "\n" + strings.Repeat("x", 4096) + "\n")

// copyOut passes the runner's output on, whole lines at a time so that the
// fault's own lines never split one.
func (p *proxy) copyOut(runner io.Reader) {
	if p.fault == BadFrames {
		p.copyRecords(runner)
		return
	}
	r := bufio.NewReaderSize(runner, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			p.mu.Lock()
			if p.fault == Garbage && line[0] == '{' {
				p.out.Write(garbage)
			}
			_, werr := p.out.Write(line)
			p.mu.Unlock()
			if werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// badFrame is a whole frame of a kind no supervisor knows (0x7f).
var badFrame = []byte{wire.TermFrameMarker, 0x7f, 0, 1, 0, 0, 0, 0, 0, 3, 't', 'b', 'a', 'd', '\n'}

// copyRecords passes the runner's output on a record (line or terminal
// frame) at a time, writing badFrame before each frame.
func (p *proxy) copyRecords(runner io.Reader) {
	r := wire.NewLineReader(runner, 0)
	r.AcceptTermFrames()
	var buf []byte
	for {
		line, frame, err := r.NextRecord()
		var le *wire.LineError
		if errors.As(err, &le) {
			continue
		}
		if err != nil {
			return
		}
		buf = buf[:0]
		if frame != nil {
			buf = append(buf, badFrame...)
			if buf, err = wire.AppendTermFrame(buf, frame.TermID, frame.ClientID, frame.Data); err != nil {
				p.fail(err)
				return
			}
		} else {
			buf = append(append(buf, line...), '\n')
		}
		if p.writeRaw(buf) != nil {
			return
		}
	}
}

func (p *proxy) writeRaw(b []byte) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.out.Write(b)
	return err
}

func (p *proxy) write(reqID string, m wire.Message) {
	line, err := wire.AppendMessage(nil, reqID, m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fault:", err)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.Write(line)
}
