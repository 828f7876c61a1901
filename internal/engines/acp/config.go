package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/pkg/engine"
)

// Engine config keys (StartOptions.Config; a session's engineConfig).
const (
	// ConfigCommand is the agent's command: a JSON array of strings
	// (["node", "agent.js", "--acp"]) or words separated by spaces. The
	// first word is looked up on PATH unless it holds a slash.
	ConfigCommand = "command"
	// ConfigAgent names a preset: a known agent that Corral knows how to
	// start, point at the model endpoint and hand its credential. Used
	// when no command is given; default "claude-code".
	ConfigAgent = "agent"
	// ConfigCredentialEnv hands credentials to a command's agent as
	// environment variables: "VAR=item" pairs separated by commas, e.g.
	// "ANTHROPIC_API_KEY=anthropic-api-key".
	ConfigCredentialEnv = "credentialEnv"
	// ConfigEndpointEnv and ConfigModelEnv name the variables that receive
	// the session's model endpoint and model, e.g. "ANTHROPIC_BASE_URL".
	ConfigEndpointEnv = "endpointEnv"
	ConfigModelEnv    = "modelEnv"
)

// PresetClaudeCode is the Claude Code ACP agent (@zed-industries/
// claude-code-acp from the project's pinned install), run on the pinned
// Claude Code CLI.
const PresetClaudeCode = "claude-code"

// settings is how to start the agent.
type settings struct {
	argv []string
	env  []string
	// home is the engine's state folder (Dir/engine/acp); dirs are the
	// folders in it the agent's environment names.
	home string
	dirs []string
	// preset is the preset used, if any.
	preset string
	// deferred are the agent's tools whose every effect reaches Corral's
	// own fs and terminal methods, where the gate judges it: their
	// permission requests are allowed at once, so the judgement happens
	// once, on the exact file content or command, and a refusal reaches
	// the model as the tool's error (an agent that is refused permission
	// may end the whole turn instead).
	deferred map[string]bool
}

// newSettings works out the agent's command and environment.
func newSettings(opts engine.StartOptions) (settings, error) {
	s := settings{home: filepath.Join(opts.Dir, "engine", "acp")}
	env := append([]string(nil), opts.Env...)
	raw := strings.TrimSpace(opts.Config[ConfigCommand])
	credEnv, endpointEnv, modelEnv := opts.Config[ConfigCredentialEnv], opts.Config[ConfigEndpointEnv], opts.Config[ConfigModelEnv]
	if raw == "" {
		preset := opts.Config[ConfigAgent]
		if preset == "" {
			preset = PresetClaudeCode
		}
		if preset != PresetClaudeCode {
			return settings{}, fmt.Errorf("acp: unknown agent preset %q (known: %s); or configure %q", preset, PresetClaudeCode, ConfigCommand)
		}
		argv, presetEnv, err := claudeCodePreset(opts.Config, s.home)
		if err != nil {
			return settings{}, err
		}
		s.argv, s.preset = argv, preset
		s.deferred = claudeCodeRoutedTools
		s.dirs = []string{filepath.Join(s.home, "claude"), filepath.Join(s.home, "home")}
		// IS_SANDBOX would let the agent offer its bypass-permissions
		// mode (and pass a flag the CLI refuses as root): never. Node's
		// NODE_OPTIONS and DEBUG are not the agent's business either, as
		// for the claude engine.
		for _, name := range []string{"IS_SANDBOX", "NODE_OPTIONS", "DEBUG"} {
			env = withoutEnv(env, name)
		}
		env = withEnv(env, presetEnv...)
		credEnv = orDefault(credEnv, "ANTHROPIC_API_KEY=anthropic-api-key")
		endpointEnv = orDefault(endpointEnv, "ANTHROPIC_BASE_URL")
		modelEnv = orDefault(modelEnv, "ANTHROPIC_MODEL")
	} else {
		argv, err := parseCommand(raw)
		if err != nil {
			return settings{}, err
		}
		s.argv = argv
	}
	pairs, err := parseCredentialEnv(credEnv)
	if err != nil {
		return settings{}, err
	}
	for _, p := range pairs {
		if v := opts.Credentials[p[1]]; v != "" {
			env = withEnv(env, p[0]+"="+v)
		}
	}
	if endpointEnv != "" && opts.ModelEndpoint != "" {
		env = withEnv(env, endpointEnv+"="+opts.ModelEndpoint)
	}
	if modelEnv != "" && opts.Model != "" {
		env = withEnv(env, modelEnv+"="+opts.Model)
	}
	s.env = env
	return s, nil
}

// claudeCodePreset runs the pinned claude-code-acp with node, on the pinned
// Claude Code CLI, with its state in the session's engine folder.
func claudeCodePreset(config map[string]string, home string) (argv, env []string, err error) {
	acpBin, _, err := locate.Binary("claude-code-acp", config)
	if err != nil {
		return nil, nil, fmt.Errorf("acp: the claude-code agent: %w", err)
	}
	// The claude CLI is found the same way, but never under the "path"
	// key, which names the agent.
	cliConfig := map[string]string{locate.KeyEnginesDir: config[locate.KeyEnginesDir]}
	claudeBin, _, err := locate.Binary("claude", cliConfig)
	if err != nil {
		return nil, nil, fmt.Errorf("acp: the claude-code agent needs the Claude Code CLI: %w", err)
	}
	// The agent's launcher is a node script; resolve the symlink so node
	// finds its modules.
	if real, err := filepath.EvalSymlinks(acpBin); err == nil {
		acpBin = real
	}
	env = []string{
		"CLAUDE_CODE_EXECUTABLE=" + claudeBin,
		"CLAUDE_CONFIG_DIR=" + filepath.Join(home, "claude"),
		"HOME=" + filepath.Join(home, "home"),
		// No side traffic: no update checks, telemetry or title calls.
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}
	return []string{"node", acpBin}, env, nil
}

// claudeCodeRoutedTools are the tools claude-code-acp carries out through
// its client when the client offers fs and terminal (Corral always does);
// it then disables Claude Code's own Read, Write, Edit and Bash.
var claudeCodeRoutedTools = map[string]bool{"mcp__acp__Bash": true, "mcp__acp__Write": true, "mcp__acp__Edit": true, "mcp__acp__Read": true}

// parseCommand reads a command: a JSON array of strings, or words
// separated by white space.
func parseCommand(raw string) ([]string, error) {
	var argv []string
	if strings.HasPrefix(raw, "[") {
		if err := json.Unmarshal([]byte(raw), &argv); err != nil {
			return nil, fmt.Errorf("acp: %s %q is not a JSON array of strings: %w", ConfigCommand, raw, err)
		}
	} else {
		argv = strings.Fields(raw)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, fmt.Errorf("acp: %s is empty", ConfigCommand)
	}
	return argv, nil
}

// parseCredentialEnv reads "VAR=item,VAR2=item2".
func parseCredentialEnv(raw string) ([][2]string, error) {
	var out [][2]string
	for _, part := range strings.Split(raw, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, item, ok := strings.Cut(part, "=")
		if !ok || name == "" || item == "" || strings.ContainsAny(name, " \t") {
			return nil, fmt.Errorf("acp: %s part %q is not VAR=item", ConfigCredentialEnv, part)
		}
		out = append(out, [2]string{name, item})
	}
	return out, nil
}

// withEnv sets each NAME=value in env, replacing an earlier value.
func withEnv(env []string, kvs ...string) []string {
	out := env
	for _, kv := range kvs {
		name, _, _ := strings.Cut(kv, "=")
		kept := out[:0:0]
		for _, old := range out {
			if !strings.HasPrefix(old, name+"=") {
				kept = append(kept, old)
			}
		}
		out = append(kept, kv)
	}
	return out
}

// withoutEnv drops the variable name from env.
func withoutEnv(env []string, name string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			out = append(out, kv)
		}
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
