package codex

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
)

// Engine-specific keys of StartOptions.Config (besides locate's "path" and
// "enginesDir"). docs/engines-codex.md describes each.
const (
	// KeyAuth selects the credential: "apiKey" (default, the
	// openai-api-key item) or "login" (the Codex CLI's own login).
	KeyAuth = "auth"
	// KeyLoginHome is the folder holding the CLI's own login (auth.json)
	// when KeyAuth is "login"; default $HOME/.codex.
	KeyLoginHome = "loginHome"
	// KeyRequestMaxRetries, KeyStreamMaxRetries and KeyStreamIdleTimeoutMS
	// bound how long a failing model endpoint can hold a turn.
	KeyRequestMaxRetries   = "requestMaxRetries"
	KeyStreamMaxRetries    = "streamMaxRetries"
	KeyStreamIdleTimeoutMS = "streamIdleTimeoutMs"
	// KeyInputPrice, KeyCachedInputPrice and KeyOutputPrice override the
	// estimated price (USD per million tokens) of the session's model.
	KeyInputPrice       = "inputPricePerMTok"
	KeyCachedInputPrice = "cachedInputPricePerMTok"
	KeyOutputPrice      = "outputPricePerMTok"
)

// CredentialItem is the credential item the adapter reads.
const CredentialItem = "openai-api-key"

const (
	authAPIKey = "apiKey"
	authLogin  = "login"

	// providerID names the model provider Corral defines in config.toml.
	providerID = "corral"
	// apiKeyEnv carries the API key to the CLI; the provider config names
	// it and the shell environment policy keeps it from commands.
	apiKeyEnv = "CORRAL_OPENAI_API_KEY"
	// defaultBaseURL is the OpenAI API, used when no endpoint is given.
	defaultBaseURL = "https://api.openai.com/v1"

	defaultRequestRetries = 2
	defaultStreamRetries  = 2
	defaultStreamIdleMS   = 180_000
)

// settings are the per-session choices written into config.toml.
type settings struct {
	Model string
	// Provider is false when the CLI's own login drives its built-in
	// provider; every other session uses Corral's provider.
	Provider bool
	BaseURL  string
	KeyEnv   string // empty: the provider sends no key
	// LoginAuth makes Corral's provider send the CLI's own login, for a
	// login session pointed at another endpoint.
	LoginAuth      bool
	RequestRetries int
	StreamRetries  int
	StreamIdleMS   int
}

// newSettings derives the settings from the start options.
func newSettings(opts engine.StartOptions) (settings, error) {
	s := settings{
		Model:          opts.Model,
		RequestRetries: defaultRequestRetries,
		StreamRetries:  defaultStreamRetries,
		StreamIdleMS:   defaultStreamIdleMS,
	}
	auth := opts.Config[KeyAuth]
	switch auth {
	case "", authAPIKey:
		auth = authAPIKey
	case authLogin:
	default:
		return settings{}, fmt.Errorf("config %s=%q: want %q or %q", KeyAuth, auth, authAPIKey, authLogin)
	}
	for key, dst := range map[string]*int{
		KeyRequestMaxRetries:   &s.RequestRetries,
		KeyStreamMaxRetries:    &s.StreamRetries,
		KeyStreamIdleTimeoutMS: &s.StreamIdleMS,
	} {
		if v, ok := opts.Config[key]; ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > 1_000_000_000 {
				return settings{}, fmt.Errorf("config %s=%q: want a non-negative integer", key, v)
			}
			*dst = n
		}
	}
	if s.StreamIdleMS == 0 {
		return settings{}, fmt.Errorf("config %s: must be positive", KeyStreamIdleTimeoutMS)
	}
	if opts.ModelEndpoint != "" {
		base, err := baseURL(opts.ModelEndpoint)
		if err != nil {
			return settings{}, err
		}
		s.Provider, s.BaseURL = true, base
	}
	key := opts.Credentials[CredentialItem]
	switch {
	case auth == authAPIKey && key != "":
		s.Provider, s.KeyEnv = true, apiKeyEnv
		if s.BaseURL == "" {
			s.BaseURL = defaultBaseURL
		}
	case auth == authLogin:
		s.LoginAuth = s.Provider
	case opts.ModelEndpoint == "":
		return settings{}, fmt.Errorf("no %s credential: store one in the keyring or the credentials file, or set config %s=%s to use the Codex CLI's own login", CredentialItem, KeyAuth, authLogin)
	}
	return s, nil
}

// baseURL checks a model endpoint and gives it the /v1 path OpenAI clients
// expect when it has no path of its own. Codex posts to {base}/responses.
func baseURL(endpoint string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("model endpoint %q: want an http or https URL", endpoint)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("model endpoint %q: credentials, query and fragment are not allowed", endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/v1"
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// features are the Codex feature flags Corral turns off: each either
// reaches the network on its own (plugins, apps, tool suggestions, skill
// dependency installs), runs code without an approval request (hooks, the
// shell snapshot that runs login scripts outside the sandbox), drives the
// thread on its own (goals), or retries a dead endpoint forever.
var features = []string{
	"apps",
	"goals",
	"hooks",
	"plugins",
	"shell_snapshot",
	"skill_mcp_dependency_install",
	"tool_suggest",
	"unbounded_connection_retries",
}

// renderConfig writes config.toml. Every key is one Codex 0.169 knows: an
// unknown key makes the server send a configWarning, which fails the session.
func renderConfig(s settings) []byte {
	var b bytes.Buffer
	b.WriteString("# Generated by Corral for one session; rewritten at every start.\n")
	if s.Model != "" {
		fmt.Fprintf(&b, "model = %s\n", tomlString(s.Model))
	}
	if s.Provider {
		fmt.Fprintf(&b, "model_provider = %s\n", tomlString(providerID))
	}
	fmt.Fprintf(&b, "approval_policy = %s\n", tomlString(approvalOnRequest))
	fmt.Fprintf(&b, "approvals_reviewer = %s\n", tomlString(reviewerUser))
	fmt.Fprintf(&b, "sandbox_mode = %s\n", tomlString(sandboxReadOnly))
	b.WriteString("check_for_update_on_startup = false\n")
	b.WriteString("web_search = \"disabled\"\n")
	b.WriteString("\n[shell_environment_policy]\n")
	fmt.Fprintf(&b, "exclude = [%s]\n", tomlString(apiKeyEnv))
	b.WriteString("\n[agents]\nenabled = false\n")
	b.WriteString("\n[analytics]\nenabled = false\n")
	b.WriteString("\n[features]\n")
	for _, f := range features {
		fmt.Fprintf(&b, "%s = false\n", f)
	}
	if s.Provider {
		fmt.Fprintf(&b, "\n[model_providers.%s]\n", providerID)
		b.WriteString("name = \"Corral\"\n")
		fmt.Fprintf(&b, "base_url = %s\n", tomlString(s.BaseURL))
		if s.KeyEnv != "" {
			fmt.Fprintf(&b, "env_key = %s\n", tomlString(s.KeyEnv))
		}
		if s.LoginAuth {
			b.WriteString("requires_openai_auth = true\n")
		}
		b.WriteString("wire_api = \"responses\"\n")
		fmt.Fprintf(&b, "request_max_retries = %d\n", s.RequestRetries)
		fmt.Fprintf(&b, "stream_max_retries = %d\n", s.StreamRetries)
		fmt.Fprintf(&b, "stream_idle_timeout_ms = %d\n", s.StreamIdleMS)
	}
	return b.Bytes()
}

// tomlString quotes s as a TOML basic string. JSON's string escapes are a
// subset of TOML's.
func tomlString(s string) string {
	out, _ := json.Marshal(s)
	return string(out)
}

// prepareHome creates the session's CODEX_HOME with its config.toml and,
// for the CLI's own login, a copy of the login.
func prepareHome(home string, s settings, opts engine.StartOptions, extra []byte) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create CODEX_HOME: %w", err)
	}
	conf := append(renderConfig(s), extra...)
	if err := writeFileAtomic(filepath.Join(home, "config.toml"), conf, 0o600); err != nil {
		return fmt.Errorf("write config.toml: %w", err)
	}
	if opts.Config[KeyAuth] != authLogin {
		return nil
	}
	src := opts.Config[KeyLoginHome]
	if src == "" {
		h := envValue(opts.Env, "HOME")
		if h == "" {
			return errors.New("login: no HOME to find the Codex CLI's login in; set config " + KeyLoginHome)
		}
		src = filepath.Join(h, ".codex")
	}
	login, err := os.ReadFile(filepath.Join(src, "auth.json"))
	if err != nil {
		return fmt.Errorf("login: read the Codex CLI's login (run codex login first): %w", err)
	}
	if err := writeFileAtomic(filepath.Join(home, "auth.json"), login, 0o600); err != nil {
		return fmt.Errorf("login: copy the Codex CLI's login: %w", err)
	}
	return nil
}

func writeFileAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// childEnv is the CLI's environment: the runner's base environment, cleaned
// once more of provider credentials, plus CODEX_HOME and the API key.
func childEnv(base []string, home, key string) []string {
	if base == nil {
		base = proc.BaseEnv()
	}
	env := proc.CleanEnv(base)
	env = append(env, "CODEX_HOME="+home)
	if key != "" {
		env = append(env, apiKeyEnv+"="+key)
	}
	return env
}

func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v
		}
	}
	return ""
}
