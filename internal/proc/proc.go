// Package proc holds the process hygiene every Corral child shares: its own
// process group, death with its parent, a graceful-then-forced stop of the
// whole group, a tail of its stderr, and an environment with no inherited
// provider credentials.
package proc

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Configure puts cmd's process in its own process group and, where the OS
// supports it, has it killed when its parent dies. Call before cmd.Start.
func Configure(cmd *exec.Cmd) {
	ConfigureDetached(cmd)
	setDeathSignal(cmd.SysProcAttr)
}

// ConfigureContext is Configure for a command made with
// exec.CommandContext: when the context ends, the command's whole process
// group is killed (exec's default kills the leader alone, and a child it
// started would live on holding its output), and Wait gives up on output a
// stray grandchild still holds waitDelay after that.
func ConfigureContext(cmd *exec.Cmd, waitDelay time.Duration) {
	Configure(cmd)
	cmd.Cancel = func() error { KillGroup(cmd.Process.Pid); return nil }
	cmd.WaitDelay = waitDelay
}

// ConfigureDetached puts cmd's process in its own process group, without
// a parent-death signal: for a child meant to outlive this process (a
// runner whose session survives a supervisor's restart).
func ConfigureDetached(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
}

// DieWithParent has cmd's process killed when its parent dies, where the
// OS supports it, and leaves it in its parent's process group. Call before
// cmd.Start.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	setDeathSignal(cmd.SysProcAttr)
}

// StopGroup sends SIGTERM to the process group of a started cmd, waits up to
// grace for done to close, then SIGKILLs the group. done is typically closed
// by the goroutine that calls cmd.Wait. It returns whether the group had to
// be killed.
func StopGroup(cmd *exec.Cmd, done <-chan struct{}, grace time.Duration) (killed bool) {
	if cmd.Process == nil {
		return false
	}
	return StopGroupOf(cmd.Process.Pid, done, grace)
}

// StopGroupOf is StopGroup for the process group pgid of a process that
// may not be this one's child (a runner a previous supervisor started):
// done is closed once it is gone, however that is learnt.
func StopGroupOf(pgid int, done <-chan struct{}, grace time.Duration) (killed bool) {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-done:
		// The leader is gone; make sure nothing it left in the group lives on.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return false
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		return true
	}
}

// KillGroup SIGKILLs the process group led by pid.
func KillGroup(pid int) { _ = syscall.Kill(-pid, syscall.SIGKILL) }

// ExitStatus describes how a waited-for process ended: its exit code (-1
// when killed by a signal) and the signal's name.
func ExitStatus(err error) (code int, signal string) {
	if err == nil {
		return 0, ""
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return -1, ws.Signal().String()
		}
		return ee.ExitCode(), ""
	}
	return -1, ""
}

// Tail is an io.Writer that keeps the last N lines written to it. It is safe
// for concurrent use.
type Tail struct {
	mu      sync.Mutex
	max     int
	lines   []string
	partial []byte
}

// NewTail returns a Tail keeping n lines.
func NewTail(n int) *Tail { return &Tail{max: n} }

// Write records p, split into lines.
func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	data := p
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			t.partial = append(t.partial, data...)
			if len(t.partial) > 4096 { // a runaway line is kept short
				t.partial = t.partial[len(t.partial)-4096:]
			}
			break
		}
		t.partial = append(t.partial, data[:i]...)
		t.push(string(t.partial))
		t.partial = t.partial[:0]
		data = data[i+1:]
	}
	return len(p), nil
}

func (t *Tail) push(line string) {
	if len(t.lines) == t.max {
		copy(t.lines, t.lines[1:])
		t.lines = t.lines[:t.max-1]
	}
	t.lines = append(t.lines, line)
}

// Lines returns the kept lines, oldest first, with any unterminated last line.
func (t *Tail) Lines() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := append([]string(nil), t.lines...)
	if len(t.partial) > 0 {
		out = append(out, string(t.partial))
	}
	if len(out) > t.max {
		out = out[len(out)-t.max:]
	}
	return out
}

// credentialPrefixes and credentialNames are environment variables that can
// carry a provider credential or redirect an agent CLI to another account.
// Engine children never inherit them: credentials reach an engine only from
// the keyring or the credentials file.
var credentialPrefixes = []string{
	"ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "COPILOT_", "GITHUB_", "GH_",
	"AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "CLOUDSDK_", "VERTEX_", "BEDROCK_",
	"GEMINI_", "MISTRAL_", "GROQ_", "OPENROUTER_", "XAI_", "DEEPSEEK_",
}

var credentialNames = map[string]bool{
	"GITHUB_TOKEN": true, "GH_TOKEN": true, "HF_TOKEN": true, "HUGGING_FACE_HUB_TOKEN": true,
	"API_KEY": true, "NPM_TOKEN": true,
}

// shellHooks are variables that make a shell run or find code the gate
// cannot see: startup files for non-interactive shells, and cd's search
// path, which would change where a judged "cd dir" lands.
var shellHooks = map[string]bool{"BASH_ENV": true, "ENV": true, "CDPATH": true}

// steeringVars make a program load or run code its command line does not
// name: a judged "node x.js" or "python y.py" would run something else.
// (Exported bash functions, BASH_FUNC_name%%, override the commands a
// judged script calls: they go too.)
var steeringVars = map[string]bool{
	"NODE_OPTIONS": true, "NODE_PATH": true, "LD_PRELOAD": true, "LD_AUDIT": true,
	"PYTHONSTARTUP": true, "PYTHONPATH": true, "PERL5OPT": true, "PERL5LIB": true, "RUBYOPT": true,
	"JAVA_TOOL_OPTIONS": true, "_JAVA_OPTIONS": true, "JDK_JAVA_OPTIONS": true,
}

// AllowEnvVar names the variable holding the user's allowlist: names,
// separated by commas, that CleanEnv keeps although they look like secrets
// or steer programs (CORRAL_ENV_ALLOW=DEPLOY_KEY,NODE_OPTIONS). Provider
// credentials (IsCredentialVar) are never kept: engines take theirs from
// the keyring or the credentials file.
const AllowEnvVar = "CORRAL_ENV_ALLOW"

// CleanEnv returns env without any variable that may carry a provider
// credential or look like a secret (IsSecretName), without shell hooks
// (BASH_ENV, ENV, CDPATH), variables that steer programs (NODE_OPTIONS,
// LD_PRELOAD, ...) or exported bash functions, and with PATH holding only
// absolute folders, so a command the gate judged runs the program it
// named. Names in env's own CORRAL_ENV_ALLOW are kept (AllowEnvVar).
func CleanEnv(env []string) []string {
	allowed := map[string]bool{}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, AllowEnvVar+"="); ok {
			for _, name := range strings.Split(v, ",") {
				allowed[strings.TrimSpace(name)] = true
			}
		}
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, _ := strings.Cut(kv, "=")
		switch {
		case IsCredentialVar(name), shellHooks[name]:
			continue
		case (IsSecretName(name) || steeringVars[name] || strings.HasPrefix(name, "BASH_FUNC_")) && !allowed[name]:
			continue
		case name == "PATH":
			kv = "PATH=" + absolutePath(value)
		}
		out = append(out, kv)
	}
	return out
}

// IsSecretName reports whether an environment variable's name looks like a
// secret's: *_KEY, *_TOKEN, *SECRET*, *PASSWORD*, *PASSWD*, *_CREDENTIALS,
// in any case. Engine children do not get such variables (CleanEnv), and
// the gate asks before a command expands one.
func IsSecretName(name string) bool {
	up := strings.ToUpper(name)
	return up == "KEY" || up == "TOKEN" || strings.HasSuffix(up, "_KEY") || strings.HasSuffix(up, "_TOKEN") ||
		strings.Contains(up, "SECRET") || strings.Contains(up, "PASSWORD") || strings.Contains(up, "PASSWD") ||
		strings.HasSuffix(up, "_CREDENTIALS")
}

func absolutePath(path string) string {
	var keep []string
	for _, dir := range strings.Split(path, ":") {
		if strings.HasPrefix(dir, "/") {
			keep = append(keep, dir)
		}
	}
	return strings.Join(keep, ":")
}

// IsCredentialVar reports whether an environment variable name is one
// CleanEnv strips.
func IsCredentialVar(name string) bool {
	up := strings.ToUpper(name)
	if credentialNames[up] {
		return true
	}
	for _, p := range credentialPrefixes {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return strings.HasSuffix(up, "_API_KEY") || strings.HasSuffix(up, "_AUTH_TOKEN") || strings.HasSuffix(up, "_ACCESS_TOKEN")
}

// BaseEnv is the current process's environment, cleaned.
func BaseEnv() []string { return CleanEnv(os.Environ()) }
