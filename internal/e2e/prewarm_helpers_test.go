package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// prewarmKey is the one key the fake model accepts, for both engines.
const prewarmKey = "sk-corral-prewarm-key"

// prewarmAnswer is what the fake model says to every request.
const prewarmAnswer = "Hello from the fake model."

// prewarmPrompt is the message every measured session and bare CLI gets.
const prewarmPrompt = "Say hello."

// prewarmRig is the real supervisor (with --prewarm) and the pinned CLIs,
// pointed at one instant fake model on loopback that speaks both engines'
// APIs.
type prewarmRig struct {
	sup        *testsupervisor.Supervisor
	url        string
	enginesDir string
}

func newPrewarmRig(tb testing.TB) *prewarmRig {
	tb.Helper()
	dir := testenv.NeedEngineCLI(tb, "claude")
	testenv.NeedEngineCLI(tb, "codex")
	sc := fakemodel.Scenario{
		Auth:     &fakemodel.Auth{APIKey: prewarmKey},
		Fallback: &fakemodel.Step{Name: "hello", Text: prewarmAnswer},
	}
	srv := fakemodel.New(sc)
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Close() })
	creds := filepath.Join(tb.TempDir(), "credentials.json")
	raw, _ := json.Marshal(map[string]string{"anthropic-api-key": prewarmKey, "openai-api-key": prewarmKey})
	if err := os.WriteFile(creds, raw, 0o600); err != nil {
		tb.Fatal(err)
	}
	sup := testsupervisor.Start(tb, testsupervisor.Options{Args: []string{
		"--prewarm", "--credentials", creds, "--engines-dir", dir,
	}})
	return &prewarmRig{sup: sup, url: url, enginesDir: dir}
}

// spec is a session on engine against the fake model in the shared cwd.
func (r *prewarmRig) spec(engine string) wire.Spec {
	s := wire.Spec{Engine: engine, Cwd: r.sup.Work, ModelEndpoint: r.url}
	if engine == "codex" {
		s.Model = "gpt-5.5"
	}
	return s
}

// warmRunners counts the runners the supervisor has made ready with
// engine started ahead so far (its debug log).
func (r *prewarmRig) warmRunners(engine string) int {
	n := 0
	for _, line := range strings.Split(r.sup.Log(), "\n") {
		if strings.Contains(line, "runner ready with an engine started ahead") && strings.Contains(line, `"engine": "`+engine+`"`) {
			n++
		}
	}
	return n
}

// waitWarm waits until the supervisor has made n runners ready with
// engine started ahead.
func (r *prewarmRig) waitWarm(tb testing.TB, engine string, n int) {
	tb.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for r.warmRunners(engine) < n {
		if time.Now().After(deadline) {
			tb.Fatalf("%d runners with %s started ahead, want %d:\n%s", r.warmRunners(engine), engine, n, r.sup.Log())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// firstOutput is where a measured session's time went, from the create
// request: its answer, the send's answer, the first output.
type firstOutput struct {
	created, sent, output time.Duration
}

// createToFirstOutput creates a session of spec over the unix socket, sends
// the prompt, and returns the session and the time from the create request
// to the first assistant output (assistantDelta or assistantText) read from
// its event stream.
func (r *prewarmRig) createToFirstOutput(tb testing.TB, spec wire.Spec) (*client.EventStream, string, time.Duration) {
	stream, id, t := r.createTimed(tb, spec)
	return stream, id, t.output
}

// createTimed is createToFirstOutput with the times of the steps.
func (r *prewarmRig) createTimed(tb testing.TB, spec wire.Spec) (*client.EventStream, string, firstOutput) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	tb.Cleanup(cancel)
	c := r.sup.Client
	t0 := time.Now()
	s, err := c.CreateSession(ctx, spec)
	if err != nil {
		tb.Fatal(err)
	}
	var t firstOutput
	t.created = time.Since(t0)
	stream, err := c.Events(ctx, s.ID, client.EventsOptions{Follow: true})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { stream.Close() })
	if reply, err := c.Command(ctx, s.ID, command.Send{Text: prewarmPrompt}); err != nil || !reply.OK {
		tb.Fatalf("send: %+v %v", reply, err)
	}
	t.sent = time.Since(t0)
	for {
		line, err := stream.Next()
		if err != nil {
			tb.Fatalf("events of %s: %v", s.ID, err)
		}
		var ev event.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			tb.Fatal(err)
		}
		switch ev.Type {
		case event.AssistantDelta, event.AssistantText:
			t.output = time.Since(t0)
			return stream, s.ID, t
		case event.TurnEnded, event.Failure:
			tb.Fatalf("session %s: %s before any output: %s", s.ID, ev.Type, ev.Data)
		}
	}
}

// Ways of running a CLI by hand.
const (
	// bareStream drives Claude Code as Corral does, stream-json in and
	// out, with the prompt as a user frame on stdin (but no initialize and
	// no hooks).
	bareStream = "claude"
	// barePrint is what a person types: claude -p PROMPT, streamed.
	barePrint = "claude-print"
	// bareExec is codex exec --json PROMPT.
	bareExec = "codex"
)

// bareColdStart runs an engine's CLI by hand, the way how says, on the
// same prompt and fake model as the sessions, and returns the time from
// its start to its first output of the answer. Codex runs its native
// binary, as the engine does, without the npm launcher's Node.
func (r *prewarmRig) bareColdStart(tb testing.TB, how string) time.Duration {
	tb.Helper()
	home := tb.TempDir()
	env := append(proc.CleanEnv(proc.BaseEnv()), "HOME="+home)
	claudeEnv := append(env, "ANTHROPIC_API_KEY="+prewarmKey, "ANTHROPIC_BASE_URL="+r.url,
		"CLAUDE_CONFIG_DIR="+filepath.Join(home, "claude"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1")
	claude := filepath.Join(r.enginesDir, "node_modules", ".bin", "claude")
	var cmd *exec.Cmd
	var stdin string
	marker := `"text_delta"`
	switch how {
	case bareStream:
		cmd = exec.Command(claude, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json", "--include-partial-messages")
		cmd.Env = claudeEnv
		stdin = `{"type":"user","message":{"role":"user","content":[{"type":"text","text":"` + prewarmPrompt + `"}]}}` + "\n"
	case barePrint:
		cmd = exec.Command(claude, "-p", "--output-format", "stream-json", "--verbose", "--include-partial-messages", prewarmPrompt)
		cmd.Env = claudeEnv
	case bareExec:
		codexHome := filepath.Join(home, "codex")
		if err := os.MkdirAll(codexHome, 0o700); err != nil {
			tb.Fatal(err)
		}
		conf := fmt.Sprintf(`model = "gpt-5.5"
model_provider = "fake"
check_for_update_on_startup = false
[analytics]
enabled = false
[model_providers.fake]
name = "fake"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
`, r.url+"/v1")
		if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(conf), 0o600); err != nil {
			tb.Fatal(err)
		}
		cmd = exec.Command(codexNative(tb, r.enginesDir), "exec", "--json", "--skip-git-repo-check", prewarmPrompt)
		cmd.Env = append(env, "OPENAI_API_KEY="+prewarmKey, "CODEX_HOME="+codexHome)
		marker = `"agent_message"`
	default:
		tb.Fatalf("no bare way %q", how)
	}
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Dir = r.sup.Work
	proc.Configure(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		proc.KillGroup(cmd.Process.Pid)
		cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if strings.Contains(sc.Text(), marker) {
			return time.Since(t0)
		}
	}
	tb.Fatalf("bare %s ended without output: %v\n%s", how, sc.Err(), stderr.String())
	return 0
}

// codexNative is the platform binary the npm launcher would exec.
func codexNative(tb testing.TB, enginesDir string) string {
	matches, _ := filepath.Glob(filepath.Join(enginesDir, "node_modules", "@openai", "codex-*", "vendor", "*", "bin", "codex"))
	if len(matches) == 0 {
		tb.Fatalf("no native codex binary under %s", enginesDir)
	}
	return matches[0]
}
