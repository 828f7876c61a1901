// Package versions says which versions of the agent CLIs Corral supports,
// from what a CLI prints for --version. The engines check it when a
// session starts; `supervisor doctor` checks the installed CLIs with it
// before any session does. It depends on nothing else in Corral, so the
// supervisor can use it without linking the engines.
//
// The Copilot CLI and ACP agents are not here: their support is decided by
// the protocol version they answer at start (docs/engines.md).
package versions

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Claude Code: 2.1.x with x at least ClaudeMinPatch. 2.1.328 (the oldest)
// and 2.1.332 (the newest) are the releases the protocol was recorded and
// tested against; later 2.1 patch releases keep the stream-json control
// protocol and are accepted, a new minor or major version is not until it
// is tested.
const (
	claudeMajor    = 2
	claudeMinor    = 1
	ClaudeMinPatch = 328
)

// ClaudeRange describes the supported Claude Code versions in messages.
var ClaudeRange = fmt.Sprintf("Claude Code %d.%d.x with x >= %d", claudeMajor, claudeMinor, ClaudeMinPatch)

var claudePattern = regexp.MustCompile(`^(\d+)\.(\d+)\.(\d+)\b`)

// Claude checks the first line of `claude --version` ("2.1.332 (Claude
// Code)") and returns the version. The version is returned with the error
// when the CLI is Claude Code of an unsupported version.
func Claude(out string) (string, error) {
	line, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	line = strings.TrimSpace(line)
	m := claudePattern.FindStringSubmatch(line)
	if m == nil || !strings.Contains(line, "Claude Code") {
		return "", fmt.Errorf("--version printed %q, which is not a Claude Code version; need %s", clip(line), ClaudeRange)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	patch, _ := strconv.Atoi(m[3])
	if major != claudeMajor || minor != claudeMinor || patch < ClaudeMinPatch {
		return m[0], fmt.Errorf("found Claude Code %s; need %s", m[0], ClaudeRange)
	}
	return m[0], nil
}

// Codex: 0.169 (the oldest tested) to 0.171 (the newest), with their patch
// releases. The app-server protocol changes between minor releases often
// enough that one not tested is refused rather than half-working.
const (
	codexMajor    = 0
	codexMinMinor = 169
	codexMaxMinor = 171
	// CodexRange describes the supported Codex versions in messages.
	CodexRange = "0.169.x to 0.171.x"
)

var codexPattern = regexp.MustCompile(`codex-cli (\d+)\.(\d+)\.(\d+)\S*`)

// Codex checks what `codex --version` printed ("codex-cli 0.171.0") and
// returns the version ("0.171.0"), also with the error when the CLI is
// Codex of an unsupported version.
func Codex(out string) (string, error) {
	m := codexPattern.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("--version printed %q, not a codex-cli version; Corral needs codex-cli %s", clip(strings.TrimSpace(out)), CodexRange)
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	version := strings.TrimPrefix(m[0], "codex-cli ")
	if major != codexMajor || minor < codexMinMinor || minor > codexMaxMinor {
		return version, fmt.Errorf("found %s; Corral needs codex-cli %s (run deploy/engines/install.sh or configure the path of a supported CLI)", m[0], CodexRange)
	}
	return version, nil
}

// clip shortens what a CLI printed for an error message.
func clip(s string) string {
	const max = 80
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}
