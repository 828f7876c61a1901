package watch

// The end-to-end test: the real supervisor and runner binaries, a script
// session that asks for a command and stages an edit, and `watch` running
// in a tmux pane, answered by keystrokes and read back with capture-pane.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testio"
	"github.com/corral-dev/corral/internal/testproc"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// watchMainEnv makes the test binary run watch instead of the tests, for
// as long as the supervisor binary has no watch subcommand.
const watchMainEnv = "CORRAL_WATCH_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(watchMainEnv) == "1" {
		os.Exit(watchMain(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// watchMain is `supervisor watch --state DIR ARGS...`.
func watchMain(args []string) int {
	if len(args) < 2 || args[0] != "--state" {
		fmt.Fprintln(os.Stderr, "usage: --state DIR [watch arguments]")
		return 2
	}
	c, err := client.ForState(args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Main(ctx, c, args[2:], os.Stdin, os.Stdout, os.Stderr)
}

// e2eScenario asks to run uptime, then rewrites lines 2 and 18 of
// notes.txt: two hunks.
const e2eScenario = `name: watch-e2e
turns:
  - steps:
      - say: "Checking the machine, then editing notes.txt."
        delayMs: 20
      - tool: shell
        command: "uptime"
      - tool: write
        path: notes.txt
        content: "%s"
      - say: "Done."
`

func numberedLines(changed ...int) string {
	var b strings.Builder
	for i := 1; i <= 20; i++ {
		word := "line"
		for _, c := range changed {
			if c == i {
				word = "LINE"
			}
		}
		fmt.Fprintf(&b, "%s %d\n", word, i)
	}
	return b.String()
}

func TestWatchInTmuxAnswersAnAskAndRejectsAHunkWithANote(t *testing.T) {
	tmuxBin := testenv.NeedTmux(t)
	bins := buildBinaries(t)
	base, err := os.MkdirTemp("", "cw-") // short: the socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	state, work := filepath.Join(base, "state"), filepath.Join(base, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(work, "notes.txt")
	if err := os.WriteFile(notes, []byte(numberedLines()), 0o600); err != nil {
		t.Fatal(err)
	}
	scenario := filepath.Join(base, "scenario.yaml")
	content := strings.ReplaceAll(numberedLines(2, 18), "\n", `\n`)
	if err := os.WriteFile(scenario, []byte(fmt.Sprintf(e2eScenario, content)), 0o600); err != nil {
		t.Fatal(err)
	}

	c := startSupervisor(t, bins, state)
	ctx := context.Background()
	s, err := c.CreateSession(ctx, wire.Spec{Engine: "script", Cwd: work, Scenario: scenario, Mode: "review"})
	if err != nil {
		t.Fatalf("create session: %v", err)
	}

	watchCmd := watchCommand(t, bins, state, s.ID)
	pane := startTmux(t, tmuxBin, base, watchCmd)

	// The message is sent from the watch itself: m, the text, Enter.
	pane.waitFor(t, "q quit")
	pane.keys(t, "m")
	pane.waitFor(t, "message:")
	pane.text(t, "go")
	pane.keys(t, "Enter")

	pane.waitFor(t, "y allow · n deny")
	pane.keys(t, "y")
	pane.waitFor(t, "hunk 1 of 2")
	pane.keys(t, "y")
	pane.waitFor(t, "hunk 2 of 2")
	pane.keys(t, "N")
	pane.waitFor(t, "note:")
	pane.text(t, "keep line 18 as it is")
	pane.keys(t, "Enter")
	pane.waitFor(t, "1 file · +1 −1")

	if got, want := readFile(t, notes), numberedLines(2); got != want {
		t.Errorf("notes.txt is\n%s\nwant line 2 changed and line 18 as it was:\n%s", got, want)
	}
	screen := pane.capture(t)
	for _, want := range []string{
		"● session " + s.ID + " · script engine · review mode",
		"› go",
		"Checking the machine, then editing notes.txt.",
		"  ? asks to run `uptime` — ",
		"    allowed",
		"  ± notes.txt +2 −2 · awaiting review",
		"    -line 18",
		"    +LINE 18",
		"    h1 accepted",
		"    h2 rejected — keep line 18 as it is",
		"    ✎ wrote notes.txt · h1 · +1 −1",
		"Done.",
	} {
		if !strings.Contains(screen, want) {
			t.Errorf("the pane lacks %q:\n%s", want, screen)
		}
	}
	if strings.Contains(screen, "another shell") {
		t.Errorf("answers typed here were reported as made elsewhere:\n%s", screen)
	}
	checkDecisions(t, c, s.ID)

	pane.keys(t, "q")
	pane.waitFor(t, "watch exited with status 0")
}

// checkDecisions reads the session's log: the answers went through as
// typed, by a person.
func checkDecisions(t *testing.T, c *client.Client, id string) {
	t.Helper()
	st, err := c.Events(context.Background(), id, client.EventsOptions{From: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var got []string
	for {
		line, err := st.Next()
		if err != nil {
			break
		}
		var e event.Event
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatal(err)
		}
		switch e.Type {
		case event.AskAnswered:
			var d event.AskAnsweredData
			json.Unmarshal(e.Data, &d)
			got = append(got, fmt.Sprintf("ask %s %s by %s", d.Decision, d.Note, d.By))
		case event.HunkDecided:
			var d event.HunkDecidedData
			json.Unmarshal(e.Data, &d)
			got = append(got, fmt.Sprintf("%s %s %s by %s", d.HunkID, d.Decision, d.Note, d.By))
		}
	}
	want := []string{"ask allow  by user", "h1 accept  by user", "h2 reject keep line 18 as it is by user"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("decisions in the log\n%q\nwant\n%q", got, want)
	}
}

type binaries struct{ supervisor, runner string }

// buildBinaries builds cmd/supervisor and cmd/runner from this module.
func buildBinaries(t *testing.T) binaries {
	t.Helper()
	testenv.NeedGo(t)
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	dir := t.TempDir()
	build := exec.Command("go", "build", "-o", dir+string(os.PathSeparator), "./cmd/supervisor", "./cmd/runner")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return binaries{filepath.Join(dir, "supervisor"), filepath.Join(dir, "runner")}
}

// startSupervisor runs `supervisor serve` on state until the test ends.
func startSupervisor(t *testing.T, bins binaries, state string) *client.Client {
	t.Helper()
	cmd := exec.Command(bins.supervisor, "serve", "--state", state, "--runner", bins.runner, "--stop-runners-on-exit")
	var stderr testio.Buffer
	cmd.Stderr = &stderr
	p := testproc.Start(t, cmd)
	t.Cleanup(func() {
		if p.Stop(15 * time.Second) {
			t.Errorf("the supervisor had to be killed:\n%s", stderr.String())
		}
	})
	c, err := client.ForState(state)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the supervisor to answer", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := c.Health(ctx)
		return err == nil
	})
	return c
}

// watchCommand is the command line that watches the session: `supervisor
// watch` once the supervisor has it, else this test binary playing it.
func watchCommand(t *testing.T, bins binaries, state, id string) []string {
	t.Helper()
	if exec.Command(bins.supervisor, "watch", "--help").Run() == nil {
		t.Log("watching with supervisor watch")
		return []string{bins.supervisor, "watch", "--state", state, id}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Log("supervisor has no watch subcommand yet: watching with the test binary")
	return []string{"env", watchMainEnv + "=1", self, "--state", state, id}
}

// tmuxPane is a pane of a tmux server of this test's own.
type tmuxPane struct {
	bin, socket string
}

func startTmux(t *testing.T, bin, dir string, command []string) *tmuxPane {
	t.Helper()
	p := &tmuxPane{bin: bin, socket: filepath.Join(dir, "tmux.sock")}
	// -u -u: UTF-8 whatever the locale; NO_COLOR unset so that the
	// interactive program runs, not the plain one.
	// The shell reports how watch exited: tmux itself sometimes leaves a
	// pane's process unreaped, without a status.
	quoted := make([]string, len(command))
	for i, a := range command {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	script := "env -u NO_COLOR " + strings.Join(quoted, " ") + `; echo "watch exited with status $?"; sleep 600`
	p.run(t, "new-session", "-d", "-x", "120", "-y", "40", "-s", "watch", "sh", "-c", script)
	t.Cleanup(func() { exec.Command(p.bin, "-S", p.socket, "kill-server").Run() })
	return p
}

func (p *tmuxPane) run(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(p.bin, append([]string{"-u", "-S", p.socket}, args...)...)
	cmd.Env = append(os.Environ(), "TERM=xterm-256color", "LANG=C.UTF-8")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

func (p *tmuxPane) keys(t *testing.T, keys ...string) {
	t.Helper()
	p.run(t, append([]string{"send-keys", "-t", "watch"}, keys...)...)
}

// text types text literally.
func (p *tmuxPane) text(t *testing.T, text string) {
	t.Helper()
	p.run(t, "send-keys", "-t", "watch", "-l", text)
}

// capture is the pane's whole text, its scrollback included.
func (p *tmuxPane) capture(t *testing.T) string {
	t.Helper()
	return p.run(t, "capture-pane", "-p", "-J", "-S", "-", "-t", "watch")
}

func (p *tmuxPane) waitFor(t *testing.T, text string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		screen := p.capture(t)
		if strings.Contains(screen, text) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pane never showed %q:\n%s", text, screen)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
