package supervisor

// Terminal benchmarks (docs/performance.md): output throughput of one
// program to WebSocket clients of the real supervisor and runner, against
// the same output read straight from a pseudo-terminal and through tmux,
// and keystroke-to-echo latency through the WebSocket.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// termBenchBytes is what one iteration's program writes: the same program
// for every variant, which waits for a line of input so every reader is in
// place before the output starts.
const termBenchBytes = 64 << 20

// termPayloads are the outputs the benchmarks time. "text" is what a
// terminal mostly carries (log lines, as a build prints them); "zeros" is
// NUL bytes, which a terminal emulator such as tmux drops without
// rendering, so for tmux it times little more than its reads.
var termPayloads = []string{"text", "zeros"}

// termBenchScript returns the shell script that waits for a line and then
// writes the payload: NUL bytes, or text lines from a file made once per
// test run (and flushed to disk then, so that no write-back runs during a
// measurement).
func termBenchScript(b *testing.B, payload string) string {
	b.Helper()
	if payload == "zeros" {
		return "read go; exec head -c " + strconv.Itoa(termBenchBytes) + " /dev/zero"
	}
	textPayload.once.Do(func() {
		textPayload.dir, textPayload.err = os.MkdirTemp("", "corral-payload-")
		if textPayload.err != nil {
			return
		}
		path := filepath.Join(textPayload.dir, "payload.txt")
		textPayload.err = atomicfile.Write(path, logLines(termBenchBytes), 0o600)
	})
	if textPayload.err != nil {
		b.Fatal(textPayload.err)
	}
	return "read go; exec cat " + filepath.Join(textPayload.dir, "payload.txt")
}

// textPayload is the text payload's file; TestMain removes its folder.
var textPayload struct {
	once sync.Once
	dir  string
	err  error
}

// logLines returns n bytes of log lines, the same on every call.
func logLines(n int) []byte {
	words := strings.Fields("build step compiling package linking test ok cache hit miss module " +
		"vendor runtime sync error warning runner session terminal supervisor the a of for")
	levels := []string{"INFO", "WARN", "DEBUG", "ERROR"}
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]byte, 0, n+200)
	for i := 0; len(out) < n; i++ {
		out = fmt.Appendf(out, "2026-11-30T05:%02d:%02d.%03dZ %-5s", i/60000%60, i/1000%60, i%1000, levels[rng.IntN(len(levels))])
		for range 4 + rng.IntN(12) {
			out = append(out, ' ')
			out = append(out, words[rng.IntN(len(words))]...)
		}
		out = append(out, '\n')
	}
	return out[:n]
}

// BenchmarkTermRawPTY is the baseline: the program's output read straight
// from the pseudo-terminal's master, as the pty package hands it out
// (blocking) and non-blocking through the runtime's poller, as the runner's
// terminal hub reads it.
func BenchmarkTermRawPTY(b *testing.B) {
	for _, payload := range termPayloads {
		for _, mode := range []string{"blocking", "poller"} {
			b.Run(payload+"/"+mode, func(b *testing.B) { benchRawPTY(b, payload, mode) })
		}
	}
}

func benchRawPTY(b *testing.B, payload, mode string) {
	script := termBenchScript(b, payload)
	b.SetBytes(termBenchBytes)
	var reader, producer time.Duration
	for i := 0; i < b.N; i++ {
		r, p := rawRun(b, script, mode)
		reader += r
		producer += p
	}
	b.ReportMetric(reader.Seconds()/float64(b.N), "reader-cpu-s/op")
	b.ReportMetric(producer.Seconds()/float64(b.N), "producer-cpu-s/op")
}

// rawRun runs the program once and reads it with readPTY in this process,
// the read timed by the benchmark, and returns the CPU time of the reader
// (this process) and of the program.
func rawRun(b *testing.B, script, mode string) (reader, producer time.Duration) {
	b.StopTimer()
	self, _ := procCPU(b, "self")
	_, producer, err := readPTY(b, script, mode == "poller")
	if err != nil {
		b.Fatal(err)
	}
	after, _ := procCPU(b, "self")
	return after - self, producer
}

// nonBlocking swaps f for a non-blocking duplicate served by the poller.
func nonBlocking(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), f.Name()), nil
}

// BenchmarkTermWebSocket runs the program in a session terminal of the
// supervisor binary and reads its output on 1 and 10 WebSocket clients
// over the supervisor's socket, until each has the exit. MB/s counts the
// output once, whatever the number of clients.
func BenchmarkTermWebSocket(b *testing.B) {
	for _, payload := range termPayloads {
		for _, clients := range []int{1, 10} {
			b.Run(fmt.Sprintf("%s/clients=%d", payload, clients), func(b *testing.B) { benchWebSocket(b, payload, clients) })
		}
	}
}

func benchWebSocket(b *testing.B, payload string, clients int) {
	script := termBenchScript(b, payload)
	d := startTermDaemon(b)
	id := d.newSession()
	b.SetBytes(termBenchBytes)
	var cpu cpuTimes
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cpu = cpu.plus(d.webSocketRun(b, id, "bench-"+strconv.Itoa(i), script, clients))
	}
	cpu.report(b)
}

// webSocketRun runs the program once in terminal termID of session id and
// reads its output on clients WebSocket clients until each has the exit,
// the benchmark timing from the line that starts it. It returns the CPU
// time each process used meanwhile.
func (d *termDaemon) webSocketRun(b *testing.B, id, termID, script string, clients int) cpuTimes {
	b.StopTimer()
	ctx := termCtx(b)
	terms := make([]*client.Terminal, clients)
	for k := range terms {
		terms[k] = d.attach(id, client.TermOptions{TermID: termID, ReadOnly: k > 0, Command: []string{"sh", "-c", script}})
	}
	var wg sync.WaitGroup
	errs := make([]error, clients)
	counts := make([]int, clients)
	for k, t := range terms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			counts[k], errs[k] = drain(ctx, t)
		}()
	}
	before := sampleCPU(b, d.cmd.Process.Pid, d.runnerPID(id))
	b.StartTimer()
	if err := terms[0].Input(ctx, []byte("go\n")); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	b.StopTimer()
	used := sampleCPU(b, d.cmd.Process.Pid, d.runnerPID(id)).minus(before)
	for k := range terms {
		if errs[k] != nil || counts[k] < termBenchBytes {
			b.Fatalf("client %d: %d bytes, %v", k, counts[k], errs[k])
		}
		terms[k].Close()
	}
	return used
}

// cpuTimes is the CPU time the processes of a terminal benchmark used:
// user plus system time from /proc/PID/stat, whole processes (every
// thread). The producer is the terminal's program, counted in the runner's
// children once the runner has waited for it.
type cpuTimes struct {
	supervisor, runner, producer, client time.Duration
}

// sampleCPU reads the CPU times so far of the supervisor, the runner and
// its waited-for children, and this process (the clients).
func sampleCPU(b *testing.B, supervisor, runner int) cpuTimes {
	sup, _ := procCPU(b, strconv.Itoa(supervisor))
	run, children := procCPU(b, strconv.Itoa(runner))
	self, _ := procCPU(b, "self")
	return cpuTimes{supervisor: sup, runner: run, producer: children, client: self}
}

func (c cpuTimes) plus(o cpuTimes) cpuTimes {
	return cpuTimes{c.supervisor + o.supervisor, c.runner + o.runner, c.producer + o.producer, c.client + o.client}
}

func (c cpuTimes) minus(o cpuTimes) cpuTimes {
	return cpuTimes{c.supervisor - o.supervisor, c.runner - o.runner, c.producer - o.producer, c.client - o.client}
}

// report gives each process's CPU seconds per iteration (per 64 MiB).
func (c *cpuTimes) report(b *testing.B) {
	n := float64(b.N)
	b.ReportMetric(c.runner.Seconds()/n, "runner-cpu-s/op")
	b.ReportMetric(c.supervisor.Seconds()/n, "sup-cpu-s/op")
	b.ReportMetric(c.client.Seconds()/n, "client-cpu-s/op")
	b.ReportMetric(c.producer.Seconds()/n, "producer-cpu-s/op")
}

// procCPU returns a process's user plus system time, and that of its
// children it has waited for, from /proc/PID/stat.
func procCPU(b *testing.B, pid string) (self, children time.Duration) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		b.Fatal(err)
	}
	// The command name, in parentheses, may hold spaces: count fields
	// after its closing one. utime, stime, cutime, cstime are fields 14-17.
	fields := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	tick := func(i int) time.Duration {
		v, err := strconv.ParseInt(fields[i-3], 10, 64)
		if err != nil {
			b.Fatalf("/proc/%s/stat field %d: %v", pid, i, err)
		}
		return time.Duration(v) * time.Second / clockTicks
	}
	return tick(14) + tick(15), tick(16) + tick(17)
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat times: 100
// on every Linux the project runs on.
const clockTicks = 100

// drain reads a terminal's output until the exit and counts it.
func drain(ctx context.Context, t *client.Terminal) (int, error) {
	total := 0
	for {
		ev, err := t.Next(ctx)
		if err != nil {
			return total, err
		}
		total += len(ev.Output)
		if ev.Exit != nil {
			return total, nil
		}
	}
}

// tmuxServer is a tmux server of a benchmark's own, on a socket in a
// temporary folder.
type tmuxServer struct{ sock string }

func startTmux(b *testing.B) *tmuxServer {
	testenv.NeedTmux(b)
	t := &tmuxServer{sock: filepath.Join(b.TempDir(), "tmux.sock")}
	b.Cleanup(func() { t.command("kill-server") })
	return t
}

func (t *tmuxServer) command(args ...string) error {
	out, err := exec.Command("tmux", append([]string{"-S", t.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tmux %v: %v: %s", args, err, out)
	}
	return nil
}

// run runs the program (termBenchScript) once in a new tmux session named
// name, with a client attached whose screen is read and dropped, timing
// from the keys that start it to its end. tmux renders the pane into the
// attached client as it goes.
func (t *tmuxServer) run(b *testing.B, name, script string) time.Duration {
	b.StopTimer()
	// The pane's program signals its end to the benchmark after the
	// payload, so it must not exec the payload's program.
	payload := strings.TrimPrefix(script, "read go; exec ")
	script = fmt.Sprintf("read go; %s; tmux -S %s wait-for -S %s-done", payload, t.sock, name)
	if err := t.command("new-session", "-d", "-s", name, "-x", "200", "-y", "50", "sh", "-c", script); err != nil {
		b.Fatal(err)
	}
	// The attached client, on a terminal of its own.
	attach := exec.Command("tmux", "-S", t.sock, "-f", "/dev/null", "attach", "-t", name)
	attach.Env = append(os.Environ(), "TERM=xterm-256color")
	ptmx, err := pty.StartWithSize(attach, &pty.Winsize{Cols: 200, Rows: 50})
	if err != nil {
		b.Fatal(err)
	}
	copied := make(chan struct{})
	go func() {
		io.Copy(io.Discard, ptmx)
		close(copied)
	}()
	waitClient(b, t.sock, name)
	start := time.Now()
	b.StartTimer()
	if err := t.command("send-keys", "-t", name, "go", "Enter"); err != nil {
		b.Fatal(err)
	}
	if err := t.command("wait-for", name+"-done"); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	elapsed := time.Since(start)
	t.command("kill-session", "-t", name)
	attach.Wait()
	ptmx.Close()
	<-copied
	return elapsed
}

// waitClient waits until a client is attached to tmux session name.
func waitClient(b *testing.B, sock, name string) {
	deadline := time.Now().Add(20 * time.Second)
	for {
		out, _ := exec.Command("tmux", "-S", sock, "list-clients", "-t", name).Output()
		if len(bytes.TrimSpace(out)) > 0 {
			return
		}
		if time.Now().After(deadline) {
			b.Fatal("the tmux client did not attach")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// BenchmarkTermThroughput is the throughput goal's measurement: every
// iteration runs the program once for each of three readers (a read
// straight from a pseudo-terminal, one WebSocket client of the supervisor,
// tmux with a client attached), in an order that rotates, and the benchmark
// reports the median of each reader's rate and of the per-iteration ratios.
// The three runs of an iteration share the machine's state of the moment;
// on a virtual machine with busy neighbours single runs move by up to 2×,
// so ratios of separate benchmarks' rates say little, while the median of
// paired ratios is steady. The raw reader and the WebSocket client each run
// in a fresh process (terminal_reader_test.go), as tmux's client does.
// ns/op is the three runs together.
func BenchmarkTermThroughput(b *testing.B) {
	for _, payload := range termPayloads {
		b.Run(payload, func(b *testing.B) { benchThroughput(b, payload) })
	}
}

func benchThroughput(b *testing.B, payload string) {
	script := termBenchScript(b, payload)
	d := startTermDaemon(b)
	id := d.newSession()
	tm := startTmux(b)
	readers := []func(i int) time.Duration{
		func(int) time.Duration {
			return runTermReader(b, termReaderEnv+"=raw", termReaderScriptEnv+"="+script)
		},
		func(i int) time.Duration {
			return runTermReader(b, termReaderEnv+"=ws", termReaderScriptEnv+"="+script,
				termReaderStateEnv+"="+d.state, termReaderSessionEnv+"="+id, termReaderTermEnv+"=bench-"+strconv.Itoa(i))
		},
		func(i int) time.Duration { return tm.run(b, "bench"+strconv.Itoa(i), script) },
	}
	var raw, ws, tmux, wsRaw, wsTmux []float64
	rate := func(d time.Duration) float64 { return termBenchBytes / d.Seconds() / 1e6 }
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var took [3]time.Duration
		for k := range readers {
			r := (i + k) % len(readers)
			took[r] = readers[r](i)
		}
		raw, ws, tmux = append(raw, rate(took[0])), append(ws, rate(took[1])), append(tmux, rate(took[2]))
		wsRaw = append(wsRaw, 100*rate(took[1])/rate(took[0]))
		wsTmux = append(wsTmux, rate(took[1])/rate(took[2]))
	}
	b.ReportMetric(median(ws), "ws-MB/s")
	b.ReportMetric(median(raw), "raw-MB/s")
	b.ReportMetric(median(tmux), "tmux-MB/s")
	b.ReportMetric(median(wsRaw), "ws/raw-%")
	b.ReportMetric(median(wsTmux), "ws/tmux-x")
}

// median returns the middle value of v (the mean of the middle two when
// their number is even).
func median(v []float64) float64 {
	v = slices.Clone(v)
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// BenchmarkTermKeystrokeEcho measures one key from the owner's WebSocket
// to a raw-mode cat in the session's terminal and back, and reports the
// p50 and p99.
func BenchmarkTermKeystrokeEcho(b *testing.B) {
	d := startTermDaemon(b)
	id := d.newSession()
	t := d.attach(id, client.TermOptions{Command: []string{"sh", "-c", "stty raw -echo; echo ready; exec cat"}})
	ctx := termCtx(b)
	var seen []byte
	for !bytes.Contains(seen, []byte("ready")) {
		ev, err := t.Next(ctx)
		if err != nil {
			b.Fatal(err)
		}
		seen = append(seen, ev.Output...)
	}
	key := []byte{'k'}
	samples := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		if err := t.Input(ctx, key); err != nil {
			b.Fatal(err)
		}
		for got := false; !got; {
			ev, err := t.Next(ctx)
			if err != nil {
				b.Fatal(err)
			}
			got = bytes.IndexByte(ev.Output, 'k') >= 0
		}
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	reportQuantiles(b, samples, time.Microsecond, "µs")
}
