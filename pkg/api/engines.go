package api

import (
	"time"

	"github.com/corral-dev/corral/pkg/wire"
)

// SettingType is the JSON type of an engine setting's value.
type SettingType string

// Setting types.
const (
	SettingString  SettingType = "string"
	SettingBoolean SettingType = "boolean"
	SettingInteger SettingType = "integer"
	SettingNumber  SettingType = "number"
)

// EngineSetting is one key of a session's engineConfig that an engine
// reads: its type and what it means. docs/engines*.md list them.
type EngineSetting struct {
	Key  string      `json:"key"`
	Type SettingType `json:"type"`
	// Values, when set, are the only strings allowed.
	Values []string `json:"values,omitempty"`
	// Path says the string is an absolute path.
	Path bool `json:"path,omitempty"`
	// Min is the smallest number allowed.
	Min *float64 `json:"min,omitempty"`
	// Default says what applies when the key is not set, in words or as
	// the value.
	Default string `json:"default,omitempty"`
	Doc     string `json:"doc"`
}

// EngineModel is a model an engine declares.
type EngineModel struct {
	ID  string `json:"id"`
	Doc string `json:"doc,omitempty"`
}

// EngineCLI is the agent CLI an engine runs, as the supervisor found it.
type EngineCLI struct {
	// Program is the CLI's name ("claude").
	Program string `json:"program"`
	// Path is where it was found, and Source how: "config" (the path
	// setting), "pinned" (the project's npm install) or "PATH". Both are
	// empty when it was not found.
	Path   string `json:"path,omitempty"`
	Source string `json:"source,omitempty"`
	// Version is what the CLI reports, when it answered.
	Version string `json:"version,omitempty"`
}

// CheckStatus is how one readiness check came out.
type CheckStatus string

// Check statuses.
const (
	// CheckOK: the check passed.
	CheckOK CheckStatus = "ok"
	// CheckFailed: the check failed; Detail says why and what to do.
	CheckFailed CheckStatus = "failed"
	// CheckSkipped: the check was not made (not asked for, or nothing to
	// check it with); Detail says why.
	CheckSkipped CheckStatus = "skipped"
)

// EngineCheck is one readiness check of an engine.
type EngineCheck struct {
	// Name is cli (the CLI is found and its version supported),
	// credentials (what the default sign-in needs is present) or accepted
	// (the credential was tried against the model endpoint, asked for
	// with check=accepted).
	Name   string      `json:"name"`
	Status CheckStatus `json:"status"`
	Detail string      `json:"detail,omitempty"`
}

// EngineCredential is a credential item an engine may use, and whether
// the supervisor's store has it (never its secret).
type EngineCredential struct {
	Item string `json:"item"`
	Set  bool   `json:"set"`
}

// Engine is one engine as GET /v1/engines describes it.
type Engine struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	// Ready says a session on the engine, with the supervisor's default
	// settings, would find what it needs to start: no check failed.
	Ready bool `json:"ready"`
	// Reason is the first failed check's detail when not Ready.
	Reason string `json:"reason,omitempty"`
	// CLI is the agent CLI the engine runs; nil for an engine built into
	// the runner.
	CLI    *EngineCLI    `json:"cli,omitempty"`
	Checks []EngineCheck `json:"checks"`
	// Credentials are the items the engine may use; the supervisor hands
	// its sessions these and no others.
	Credentials []EngineCredential `json:"credentials"`
	// Models are the models the engine declares, the default first. A
	// session may name another that the engine's CLI accepts.
	Models []EngineModel `json:"models"`
	// Settings are the keys of engineConfig the engine reads.
	Settings []EngineSetting `json:"settings"`
	// Defaults are the supervisor's settings for sessions on this engine
	// (serve --engine-config), under what a session's own engineConfig
	// sets.
	Defaults wire.EngineConfig `json:"defaults,omitempty"`
}

// EnginesReply is the body of GET /v1/engines.
type EnginesReply struct {
	OK      bool     `json:"ok"`
	Engines []Engine `json:"engines"`
	// CheckedAt is when the checks were made: the supervisor keeps their
	// results for a while (refresh=true checks again).
	CheckedAt time.Time `json:"checkedAt"`
}
