// Package catalog describes the engines Corral knows without linking them:
// for each, the CLI it runs, the credential items it may read, the settings
// a session may give it (the spec's engineConfig) with their types, and
// the models it declares.
//
// It is the one place these facts are written down. The supervisor, which
// does not link the engines, reads it to hand a runner only the credentials
// its engine uses, to check a spec's engineConfig, and to answer
// GET /v1/engines; the JSON Schema's per-engine settings and the docs'
// settings tables are generated from it or checked against it; each
// engine's tests check that the keys it reads are the ones declared here.
package catalog

import (
	"slices"
	"sort"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/pkg/api"
)

// Engine is what Corral knows of one engine before running it.
type Engine struct {
	Name    string
	Summary string
	// CLI is the program the engine drives ("" for one built into the
	// runner).
	CLI string
	// Credentials are the items a session on the engine may use; the
	// supervisor hands its runner these and no others.
	Credentials []string
	// Settings are the keys of engineConfig the engine reads.
	Settings []api.EngineSetting
	// Models are the models the engine declares, for a shell's picker:
	// the first is the default. A session may name any other model the
	// engine's CLI accepts.
	Models []api.EngineModel
	// Doc is the engine's page under docs/.
	Doc string
}

// Setting returns the engine's setting key, if it declares one.
func (e Engine) Setting(key string) (api.EngineSetting, bool) {
	i := slices.IndexFunc(e.Settings, func(s api.EngineSetting) bool { return s.Key == key })
	if i < 0 {
		return api.EngineSetting{}, false
	}
	return e.Settings[i], true
}

// Keys lists the engine's setting keys in declaration order.
func (e Engine) Keys() []string {
	keys := make([]string, len(e.Settings))
	for i, s := range e.Settings {
		keys[i] = s.Key
	}
	return keys
}

// Setting keys more than one engine reads.
const (
	// KeyPath is an explicit path to the engine's CLI (locate.KeyPath).
	KeyPath = "path"
	// KeyEnginesDir is the folder of the pinned npm install
	// (locate.KeyEnginesDir).
	KeyEnginesDir = "enginesDir"
	// KeyAuth chooses the credential (codex, copilot).
	KeyAuth = "auth"
	// KeyCacheDir is where a CLI unpacks itself (copilot); the runner
	// sets it to the state folder's cache when a session does not.
	KeyCacheDir = "cacheDir"
)

// Reserved are keys the runner derives from the spec; a session cannot set
// them in engineConfig.
var Reserved = []string{"plugin", "pluginPath"}

var (
	zero = 0.0
	one  = 1.0
)

// located are the settings of every engine that runs a CLI found by
// internal/locate.
var located = []api.EngineSetting{
	{Key: KeyPath, Type: api.SettingString, Path: true, Default: "the pinned install, else PATH",
		Doc: "the CLI binary to run (an absolute path)"},
	{Key: KeyEnginesDir, Type: api.SettingString, Path: true, Default: "$CORRAL_ENGINES_DIR",
		Doc: "the folder of the pinned npm install (its node_modules/.bin holds the CLI)"},
}

func withLocated(s ...api.EngineSetting) []api.EngineSetting {
	return append(slices.Clone(located), s...)
}

// prices are the price overrides of an engine that estimates costs.
var prices = []api.EngineSetting{
	{Key: "inputPricePerMTok", Type: api.SettingNumber, Min: &zero, Default: "the price table",
		Doc: "USD per million input tokens, for cost estimates"},
	{Key: "cachedInputPricePerMTok", Type: api.SettingNumber, Min: &zero, Default: "the price table",
		Doc: "USD per million cached input tokens, for cost estimates"},
	{Key: "outputPricePerMTok", Type: api.SettingNumber, Min: &zero, Default: "the price table",
		Doc: "USD per million output tokens, for cost estimates"},
}

var engines = []Engine{
	{
		Name:    "script",
		Summary: "built in, deterministic, no API key: plays a scenario file",
		Models:  []api.EngineModel{{ID: "script-1", Doc: "$3 / $15 per million input / output tokens (estimated)"}},
		Doc:     "docs/engines.md",
	},
	{
		Name:        "claude",
		Summary:     "the Claude Code CLI over its stream-json control protocol",
		CLI:         "claude",
		Credentials: []string{creds.AnthropicAPIKey},
		Settings:    withLocated(),
		Models: []api.EngineModel{
			{ID: "sonnet", Doc: "an alias the CLI resolves to its current Sonnet model"},
			{ID: "opus", Doc: "an alias the CLI resolves to its current Opus model"},
			{ID: "haiku", Doc: "an alias the CLI resolves to its current Haiku model"},
			{ID: "claude-opus-5-5", Doc: "1,000,000-token context window"},
		},
		Doc: "docs/engines-claude.md",
	},
	{
		Name:        "codex",
		Summary:     "the Codex CLI's app-server over JSON-RPC",
		CLI:         "codex",
		Credentials: []string{creds.OpenAIAPIKey},
		Settings: withLocated(append([]api.EngineSetting{
			{Key: KeyAuth, Type: api.SettingString, Values: []string{"apiKey", "login"}, Default: "apiKey",
				Doc: "apiKey: the openai-api-key credential. login: the Codex CLI's own login (auth.json under loginHome, copied into the session), only when chosen"},
			{Key: "loginHome", Type: api.SettingString, Path: true, Default: "$HOME/.codex",
				Doc: "where the CLI's own login (auth.json) is, for auth=login"},
			{Key: "requestMaxRetries", Type: api.SettingInteger, Min: &zero, Default: "2",
				Doc: "Codex's retries of a failed model request"},
			{Key: "streamMaxRetries", Type: api.SettingInteger, Min: &zero, Default: "2",
				Doc: "Codex's reconnects of a broken response stream"},
			{Key: "streamIdleTimeoutMs", Type: api.SettingInteger, Min: &one, Default: "180000",
				Doc: "how long a silent response stream is waited for, in milliseconds"},
		}, prices...)...),
		Models: []api.EngineModel{
			{ID: "gpt-5.5", Doc: "bundled with Codex 0.169"},
			{ID: "gpt-5.6-sol"}, {ID: "gpt-5.6-terra"}, {ID: "gpt-5.6-luna"},
			{ID: "gpt-6-sol"}, {ID: "gpt-6-astra"}, {ID: "gpt-6-luna"},
			{ID: "gpt-6.1-sol"}, {ID: "gpt-6.1-terra"},
		},
		Doc: "docs/engines-codex.md",
	},
	{
		Name:    "copilot",
		Summary: "the GitHub Copilot CLI in headless mode over JSON-RPC",
		CLI:     "copilot",
		// github-token for GitHub's own routing; a custom provider's key
		// is openai-api-key, or anthropic-api-key for providerType
		// anthropic.
		Credentials: []string{creds.GitHubToken, creds.OpenAIAPIKey, creds.AnthropicAPIKey},
		Settings: withLocated(
			api.EngineSetting{Key: KeyAuth, Type: api.SettingString, Values: []string{"token", "login"}, Default: "token",
				Doc: "token: the github-token credential. login: the CLI's own sign-in (copilot login), only when chosen"},
			api.EngineSetting{Key: "wireApi", Type: api.SettingString, Values: []string{"completions", "responses"}, Default: "completions",
				Doc: "the model endpoint's wire format: completions (OpenAI Chat Completions, POST {endpoint}/chat/completions) or responses (OpenAI Responses, POST {endpoint}/responses)"},
			api.EngineSetting{Key: "providerType", Type: api.SettingString, Values: []string{"openai", "azure", "anthropic"}, Default: "openai",
				Doc: "the model endpoint's provider type; its key is openai-api-key, or anthropic-api-key for anthropic"},
			api.EngineSetting{Key: "offline", Type: api.SettingBoolean, Default: "true with a model endpoint",
				Doc: "with a model endpoint: false lets the CLI reach the network beyond the endpoint (web tools, telemetry)"},
			api.EngineSetting{Key: KeyCacheDir, Type: api.SettingString, Path: true, Default: "<state>/cache",
				Doc: "the folder the CLI unpacks itself into (about 235 MB), shared between sessions"},
			api.EngineSetting{Key: "logLevel", Type: api.SettingString, Values: []string{"none", "error", "warning", "info", "debug", "all"},
				Default: "the CLI's default", Doc: "the CLI's --log-level; it logs under its home folder"},
		),
		Models: []api.EngineModel{
			{ID: "gpt-4.1", Doc: "asked for when a session names an endpoint but no model"},
			{ID: "gpt-5"}, {ID: "gpt-5-mini"}, {ID: "claude-sonnet-4"}, {ID: "gemini-2.5-pro"},
		},
		Doc: "docs/engines-copilot.md",
	},
	{
		Name:    "acp",
		Summary: "any agent speaking the Agent Client Protocol (default: the Claude Code ACP agent)",
		CLI:     "claude-code-acp",
		// credentialEnv may hand the agent any item.
		Credentials: slices.Clone(creds.Items),
		Settings: []api.EngineSetting{
			{Key: KeyPath, Type: api.SettingString, Path: true, Default: "the pinned install, else PATH",
				Doc: "the claude-code preset's agent (claude-code-acp) to run (an absolute path)"},
			located[1],
			{Key: "command", Type: api.SettingString, Default: "the preset's",
				Doc: `the agent's command: a JSON array (["node", "agent.js", "--acp"]) or words separated by spaces (no shell quoting); the first word is looked up on PATH unless it holds a slash`},
			{Key: "agent", Type: api.SettingString, Values: []string{"claude-code"}, Default: "claude-code",
				Doc: "the preset used when no command is given"},
			{Key: "credentialEnv", Type: api.SettingString, Default: "ANTHROPIC_API_KEY=anthropic-api-key (the preset)",
				Doc: "credentials handed to the agent as environment variables: VAR=item pairs, comma-separated (OPENAI_API_KEY=openai-api-key)"},
			{Key: "endpointEnv", Type: api.SettingString, Default: "ANTHROPIC_BASE_URL (the preset)",
				Doc: "the variable that receives the session's model endpoint"},
			{Key: "modelEnv", Type: api.SettingString, Default: "ANTHROPIC_MODEL (the preset)",
				Doc: "the variable that receives the session's model"},
		},
		Doc: "docs/engines-acp.md",
	},
}

// Engines lists the engines built into the runner, in a stable order.
func Engines() []Engine {
	out := slices.Clone(engines)
	return out
}

// Names lists the built-in engines' names, sorted.
func Names() []string {
	names := make([]string, len(engines))
	for i, e := range engines {
		names[i] = e.Name
	}
	sort.Strings(names)
	return names
}

// Lookup returns the built-in engine called name; ok is false for any
// other name (a plugin's).
func Lookup(name string) (Engine, bool) {
	i := slices.IndexFunc(engines, func(e Engine) bool { return e.Name == name })
	if i < 0 {
		return Engine{}, false
	}
	return engines[i], true
}

// CredentialsFor lists the credential items a session on engine may use:
// the engine's own, or every item for a plugin engine, whose needs Corral
// cannot know (plugins get them as they did before engines declared
// theirs).
func CredentialsFor(engine string) []string {
	if e, ok := Lookup(engine); ok {
		return slices.Clone(e.Credentials)
	}
	return slices.Clone(creds.Items)
}
