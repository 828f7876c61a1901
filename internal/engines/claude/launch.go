package claude

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/engines/versions"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
)

// supportedRange describes the supported versions in messages
// (internal/engines/versions decides them).
var supportedRange = versions.ClaudeRange

// versionTimeout bounds `claude --version`, which answers in tens of
// milliseconds.
const versionTimeout = 20 * time.Second

// CredentialItem is the credential the adapter hands the CLI.
const CredentialItem = "anthropic-api-key"

// checkVersion runs `bin --version` and checks the version it reports.
func checkVersion(ctx context.Context, bin string, env []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Env = env
	proc.ConfigureContext(cmd, time.Second)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String() + " " + stdout.String())
		return "", fmt.Errorf("%s --version failed (%v): %s; need %s", bin, err, msg, supportedRange)
	}
	return parseVersion(stdout.String())
}

// parseVersion checks the first line of `claude --version`, e.g.
// "2.1.332 (Claude Code)".
func parseVersion(out string) (string, error) { return versions.Claude(out) }

// baseArgs are the flags of every long-lived CLI process.
func baseArgs() []string {
	return []string{
		"--output-format", "stream-json",
		"--verbose",
		"--input-format", "stream-json",
		"--permission-prompt-tool", "stdio",
		"--include-partial-messages",
	}
}

// sessionArgs select the conversation: a new one under a chosen id, the
// continuation of a stored one, or a fork of a stored one under a new id.
func sessionArgs(id string, resume bool, forkFrom string) []string {
	switch {
	case forkFrom != "":
		return []string{"--resume", forkFrom, "--fork-session", "--session-id", id}
	case resume:
		return []string{"--resume", id}
	default:
		return []string{"--session-id", id}
	}
}

// Environment variables the adapter sets for the CLI. Everything else comes
// from StartOptions.Env, which has no provider credential.
const (
	envConfigDir   = "CLAUDE_CONFIG_DIR"
	envKeyFD       = "CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR"
	envBaseURL     = "ANTHROPIC_BASE_URL"
	envNonEssental = "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC"
)

// quietEnv switches off everything the CLI would do besides the model
// calls of the session: telemetry, error reports, the updater, crash
// reports of its embedded runtime, and the connectivity check and title
// calls that CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC covers.
var quietEnv = []string{
	envNonEssental + "=1",
	"DISABLE_TELEMETRY=1",
	"DISABLE_AUTOUPDATER=1",
	"DISABLE_ERROR_REPORTING=1",
	"BUN_ENABLE_CRASH_REPORTING=0",
}

// droppedEnv are variables that would change how the CLI's runtime behaves
// if inherited (the Agent SDK drops them too).
var droppedEnv = map[string]bool{"NODE_OPTIONS": true, "DEBUG": true}

// buildEnv is the CLI's environment: base, cleaned once more of anything
// that could carry a credential, plus the adapter's own variables. The API
// key is not among them: keyPipe hands it over.
func buildEnv(base []string, configDir, baseURL string) []string {
	env := make([]string, 0, len(base)+len(quietEnv)+3)
	for _, kv := range proc.CleanEnv(base) {
		name, _, _ := strings.Cut(kv, "=")
		if droppedEnv[name] {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, envConfigDir+"="+configDir)
	env = append(env, quietEnv...)
	if baseURL != "" {
		env = append(env, envBaseURL+"="+baseURL)
	}
	return env
}

// keyFD is the descriptor the CLI reads its API key from.
const keyFD = 3

// keyPipe hands cmd its API key on a pipe (descriptor keyFD, named by
// CLAUDE_CODE_API_KEY_FILE_DESCRIPTOR) rather than in ANTHROPIC_API_KEY,
// which every tool the agent runs would inherit: the CLI reads the pipe to
// its end as it starts, before any tool runs, and keeps the key in memory,
// so a tool that finds the descriptor reads nothing. Call the returned
// function once cmd has started (or failed to).
func keyPipe(cmd *exec.Cmd, key string) (started func(), err error) {
	if key == "" {
		return func() {}, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("claude CLI key pipe: %w", err)
	}
	// A key is far smaller than a pipe's buffer: the write does not block.
	_, err = io.WriteString(w, key+"\n")
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("claude CLI key pipe: %w", err)
	}
	cmd.ExtraFiles = []*os.File{r} // the first extra file is descriptor 3
	cmd.Env = append(cmd.Env[:len(cmd.Env):len(cmd.Env)], fmt.Sprintf("%s=%d", envKeyFD, keyFD))
	return func() { r.Close() }, nil
}

// locateCLI finds the binary and checks its version.
func locateCLI(ctx context.Context, config map[string]string, env []string) (bin, version string, err error) {
	bin, source, err := locate.Binary("claude", config)
	if err != nil {
		return "", "", fmt.Errorf("%w; need %s", err, supportedRange)
	}
	version, err = checkVersion(ctx, bin, env)
	if err != nil {
		return bin, version, fmt.Errorf("claude CLI %s (from %s): %w", bin, source, err)
	}
	return bin, version, nil
}

// configDirFor is where the CLI keeps the session's state: its settings,
// conversations (projects/<cwd>/<id>.jsonl) and shell snapshots.
func configDirFor(sessionDir string) string {
	return filepath.Join(sessionDir, "engine", "claude")
}

// newConversationID returns a random version 4 UUID, the form --session-id
// requires.
func newConversationID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("conversation id: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}
