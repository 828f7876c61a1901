package plugin

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/corral-dev/corral/pkg/wire"
)

// The handshake a plugin and a runner must agree on. A plugin built against
// another protocol version, or for another host (another magic cookie),
// fails the session's start with an engineError naming both sides.
const (
	// ProtocolVersion is the version of the Corral engine protocol: the
	// RPC methods and argument types in protocol.go. Bump it on any
	// incompatible change.
	ProtocolVersion = 1
	// MagicCookieKey and MagicCookieValue tell a plugin binary it was
	// started by a Corral runner. They guard against running the wrong
	// binary, not against an attacker.
	MagicCookieKey   = "CORRAL_ENGINE_PLUGIN"
	MagicCookieValue = "4f8e1d2c-corral-engine"
)

// pluginName is the one plugin a Corral plugin binary dispenses.
const pluginName = "engine"

// Handshake returns the go-plugin handshake of Corral engine plugins.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   MagicCookieKey,
		MagicCookieValue: MagicCookieValue,
	}
}

// expectedHandshake describes what a runner expects of a plugin binary.
func expectedHandshake() string {
	return fmt.Sprintf("a Corral engine plugin (go-plugin core protocol %d, engine protocol %d over net/rpc, magic cookie %s=%s)",
		goplugin.CoreProtocolVersion, ProtocolVersion, MagicCookieKey, MagicCookieValue)
}

// HandshakeError is a plugin binary that did not complete the handshake: it
// exited at once (usually a magic cookie it does not accept), printed
// something that is not a handshake line, or spoke another protocol version
// or transport.
type HandshakeError struct {
	Path     string
	Expected string
	Found    string
	Err      error
}

func (e *HandshakeError) Error() string {
	return fmt.Sprintf("plugin %s: expected %s; found %s", e.Path, e.Expected, e.Found)
}

func (e *HandshakeError) Unwrap() error { return e.Err }

// Is makes a HandshakeError match wire.ErrProtocol.
func (e *HandshakeError) Is(target error) bool { return target == wire.ErrProtocol }

var (
	pluginVersionRe = regexp.MustCompile(`Plugin version: (\S+?),`)
	coreVersionRe   = regexp.MustCompile(`Plugin version: (\S+), Core version`)
	protocolRe      = regexp.MustCompile(`unsupported plugin protocol "([^"]*)"`)
)

// describeHandshake says what a plugin showed instead of a good handshake,
// from go-plugin's launch error, whether the process has exited (and how),
// and the first line of its stderr.
func describeHandshake(err error, exited bool, exit, firstStderr string) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "incompatible core API version"):
		if m := coreVersionRe.FindStringSubmatch(msg); m != nil {
			return "go-plugin core protocol " + m[1]
		}
	case strings.Contains(msg, "incompatible API version"):
		if m := pluginVersionRe.FindStringSubmatch(msg); m != nil {
			return "engine protocol " + m[1]
		}
	case strings.Contains(msg, "unsupported plugin protocol"):
		if m := protocolRe.FindStringSubmatch(msg); m != nil {
			return "the " + m[1] + " transport"
		}
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Sprintf("no handshake line within %s", handshakeTimeout)
	}
	if line, ok := strings.CutPrefix(msg, "Unrecognized remote plugin message: "); ok {
		if line, _, _ = strings.Cut(line, "\n"); line != "" {
			return fmt.Sprintf("the line %q instead of a handshake line", line)
		}
	}
	if exited {
		found := fmt.Sprintf("the plugin exited (%s) without a handshake line", exit)
		if firstStderr != "" {
			found += "; its stderr begins: " + firstStderr
		}
		return found
	}
	return msg
}

// errPluginGone marks a call that failed because the plugin connection
// ended.
var errPluginGone = errors.New("the plugin connection ended")
