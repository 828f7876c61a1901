package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// errorInfo is the decoded codexErrorInfo of a turn error: its variant name
// and the HTTP status some variants carry.
type errorInfo struct {
	Name       string
	HTTPStatus int
}

// parseErrorInfo reads codexErrorInfo, which is either a variant name
// ("unauthorized") or a one-key object ({"httpConnectionFailed":
// {"httpStatusCode": 401}}).
func parseErrorInfo(raw json.RawMessage) errorInfo {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return errorInfo{}
	}
	var name string
	if json.Unmarshal(raw, &name) == nil {
		return errorInfo{Name: name}
	}
	var obj map[string]struct {
		HTTPStatusCode *int `json:"httpStatusCode"`
	}
	if json.Unmarshal(raw, &obj) != nil || len(obj) != 1 {
		return errorInfo{Name: "other"}
	}
	for k, v := range obj {
		info := errorInfo{Name: k}
		if v.HTTPStatusCode != nil {
			info.HTTPStatus = *v.HTTPStatusCode
		}
		return info
	}
	return errorInfo{}
}

// turnFailure maps a failed turn onto a Corral failure: a refused
// credential is signInExpired whichever variant carries the 401, a full
// context window is contextFull, and everything else is engineError.
func turnFailure(te *turnError) *engine.Failure {
	if te == nil {
		return &engine.Failure{Code: event.FailEngineError, Message: "codex: the turn failed without an error message"}
	}
	info := parseErrorInfo(te.CodexErrorInfo)
	msg := te.Message
	if te.AdditionalDetails != nil && *te.AdditionalDetails != "" && !strings.Contains(msg, *te.AdditionalDetails) {
		msg += " (" + *te.AdditionalDetails + ")"
	}
	switch {
	case info.Name == "unauthorized" || info.HTTPStatus == 401:
		return &engine.Failure{Code: event.FailSignInExpired, Message: "codex: the model endpoint refused the credential (HTTP 401); store a valid " + CredentialItem + " or sign in again: " + msg}
	case info.Name == "contextWindowExceeded":
		return &engine.Failure{Code: event.FailContextFull, Message: "codex: the conversation no longer fits the model's context window: " + msg}
	}
	detail := info.Name
	if info.HTTPStatus != 0 {
		detail = fmt.Sprintf("%s, HTTP %d", info.Name, info.HTTPStatus)
	}
	if detail != "" {
		msg += " [" + detail + "]"
	}
	return &engine.Failure{Code: event.FailEngineError, Message: "codex: " + msg}
}

// engineFailure is an engineError failure. The message is complete on its
// own (err's text is appended), because the failure event carries the
// message, not the error chain.
func engineFailure(message string, err error, stderr []string) *engine.Failure {
	if err != nil {
		message += ": " + err.Error()
	}
	return &engine.Failure{Code: event.FailEngineError, Message: message, Stderr: stderr}
}

// benignWarnings are the configWarning summaries that do not mean the
// configuration was rejected. Any other warning fails the session, because
// the server carries on with defaults after a bad config (the default
// provider, the real network).
var benignWarnings = []string{
	// The bundled bubblewrap is used instead; the sandbox still works.
	"Codex could not find bubblewrap on PATH",
	// Project-local config, hooks and exec policies of an untrusted
	// worktree are ignored, which is what Corral wants: they could
	// loosen the sandbox or run code without an approval request.
	"Project-local config, hooks, and exec policies are disabled",
}

func isBenignWarning(w configWarning) bool {
	for _, prefix := range benignWarnings {
		if strings.HasPrefix(w.Summary, prefix) {
			return true
		}
	}
	return false
}

// warningFailure is the failure for a configuration the server rejected.
func warningFailure(w configWarning) *engine.Failure {
	msg := "codex rejected the generated configuration: " + w.Summary
	if w.Details != nil && *w.Details != "" {
		msg += ": " + *w.Details
	}
	return &engine.Failure{Code: event.FailEngineError, Message: msg}
}
