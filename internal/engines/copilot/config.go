package copilot

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/proc"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Engine-specific keys of StartOptions.Config (besides locate's "path" and
// "enginesDir"). docs/engines-copilot.md describes each.
const (
	// ConfigAuth is "token" (the default: the github-token credential) or
	// "login" (the CLI's own stored sign-in, only when chosen explicitly).
	ConfigAuth = "auth"
	// ConfigWireAPI is the custom provider's wire format: "completions"
	// (OpenAI Chat Completions, the default) or "responses" (OpenAI
	// Responses).
	ConfigWireAPI = "wireApi"
	// ConfigProviderType is the custom provider's type: "openai" (the
	// default), "azure" or "anthropic".
	ConfigProviderType = "providerType"
	// ConfigCacheDir overrides the folder the CLI unpacks itself into
	// (XDG_CACHE_HOME), so sessions can share the unpacked package.
	ConfigCacheDir = "cacheDir"
	// ConfigOffline is "true" (the default with a model endpoint) or
	// "false"; offline mode keeps the CLI off every network but the
	// endpoint.
	ConfigOffline = "offline"
	// ConfigLogLevel is passed as --log-level (none, error, warning, info,
	// debug, all); the CLI logs under its home folder.
	ConfigLogLevel = "logLevel"
)

// Values of ConfigAuth.
const (
	authToken = "token"
	authLogin = "login"
)

// defaultEndpointModel is the model asked for when a session names an
// endpoint but no model: the CLI requires one for a custom provider, and
// its catalog knows this one's limits.
const defaultEndpointModel = "gpt-4.1"

// tokenEnvVar carries the github-token credential to the CLI, which reads
// it through --auth-token-env and strips it from its tools' environment
// through --secret-env-vars.
const tokenEnvVar = "CORRAL_COPILOT_GITHUB_TOKEN"

// settings is everything a session's CLI is started with.
type settings struct {
	bin       string // the executable to run
	binSource string // where locate found it

	home     string // COPILOT_HOME
	cacheDir string // XDG_CACHE_HOME
	cwd      string

	model    string
	provider *provider // nil: GitHub Copilot's own model routing
	offline  bool

	auth        string
	githubToken string
	logLevel    string

	env []string // the child's environment, complete

	agent *wire.AgentPreset // the session's preset, nil for none
}

// loadSettings checks opts and derives the settings of a session.
func loadSettings(opts engine.StartOptions) (settings, error) {
	var s settings
	if opts.Host == nil {
		return s, errors.New("copilot: StartOptions.Host is required")
	}
	if opts.Dir == "" || !filepath.IsAbs(opts.Dir) {
		return s, fmt.Errorf("copilot: session folder %q must be an absolute path", opts.Dir)
	}
	if opts.Cwd == "" || !filepath.IsAbs(opts.Cwd) {
		return s, fmt.Errorf("copilot: working directory %q must be an absolute path", opts.Cwd)
	}
	cfg := opts.Config
	bin, source, err := locate.Binary("copilot", cfg)
	if err != nil {
		return s, fmt.Errorf("copilot: %w", err)
	}
	s.bin, s.binSource = nativeBinary(bin), source
	s.cwd = opts.Cwd

	state := filepath.Join(opts.Dir, "engine", "copilot")
	s.home = filepath.Join(state, "home")
	s.cacheDir = filepath.Join(state, "cache")
	if dir := cfg[ConfigCacheDir]; dir != "" {
		if !filepath.IsAbs(dir) {
			return s, fmt.Errorf("copilot: %s %q must be an absolute path", ConfigCacheDir, dir)
		}
		s.cacheDir = dir
	}

	s.auth = cfg[ConfigAuth]
	if s.auth == "" {
		s.auth = authToken
	}
	if s.auth != authToken && s.auth != authLogin {
		return s, fmt.Errorf("copilot: %s is %q; want %q or %q", ConfigAuth, s.auth, authToken, authLogin)
	}
	if s.auth == authToken {
		s.githubToken = opts.Credentials[creds.GitHubToken]
	}

	s.logLevel = cfg[ConfigLogLevel]
	s.model = opts.Model
	if opts.ModelEndpoint != "" {
		p, err := endpointProvider(opts, cfg)
		if err != nil {
			return s, err
		}
		s.provider = p
		if s.model == "" {
			s.model = defaultEndpointModel
		}
		s.offline = true
		if v := cfg[ConfigOffline]; v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return s, fmt.Errorf("copilot: %s is %q; want true or false", ConfigOffline, v)
			}
			s.offline = b
		}
	}
	if s.provider == nil && s.auth == authToken && s.githubToken == "" {
		return s, &engine.Failure{
			Code: event.FailSignInExpired,
			Message: "copilot: no github-token credential: store one (keyring item github-token, or the credentials file), " +
				"point the session at a model endpoint, or set the engine's auth to \"login\" to use the CLI's own sign-in",
		}
	}
	s.env = childEnv(opts.Env, s)
	s.agent = opts.Agent
	return s, nil
}

// endpointProvider builds the session's custom provider from the model
// endpoint.
func endpointProvider(opts engine.StartOptions, cfg map[string]string) (*provider, error) {
	u, err := url.Parse(opts.ModelEndpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("copilot: model endpoint %q is not an http(s) URL", opts.ModelEndpoint)
	}
	p := &provider{Type: cfg[ConfigProviderType], BaseURL: opts.ModelEndpoint, WireAPI: cfg[ConfigWireAPI]}
	if p.Type == "" {
		p.Type = "openai"
	}
	if p.WireAPI == "" {
		p.WireAPI = "completions"
	}
	switch p.Type {
	case "openai", "azure":
		p.APIKey = opts.Credentials[creds.OpenAIAPIKey]
	case "anthropic":
		p.APIKey = opts.Credentials[creds.AnthropicAPIKey]
	default:
		return nil, fmt.Errorf("copilot: %s is %q; want openai, azure or anthropic", ConfigProviderType, p.Type)
	}
	if p.WireAPI != "completions" && p.WireAPI != "responses" {
		return nil, fmt.Errorf("copilot: %s is %q; want completions or responses", ConfigWireAPI, p.WireAPI)
	}
	return p, nil
}

// childEnv is the CLI's environment: the runner's base environment, cleaned
// once more of anything that could carry a credential or redirect the CLI,
// plus the session's own folders and, in token mode, the token.
func childEnv(base []string, s settings) []string {
	if base == nil {
		base = proc.BaseEnv()
	}
	env := make([]string, 0, len(base)+8)
	for _, kv := range proc.CleanEnv(base) {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case tokenEnvVar, "XDG_CACHE_HOME", "NO_COLOR":
			continue
		}
		env = append(env, kv)
	}
	env = append(env,
		"COPILOT_HOME="+s.home,
		"XDG_CACHE_HOME="+s.cacheDir,
		"COPILOT_AUTO_UPDATE=false",
		"NO_COLOR=1",
	)
	if s.provider != nil && s.offline {
		// Offline mode refuses to start without an endpoint and a model in
		// its environment; the session's provider is what serves requests.
		env = append(env,
			"COPILOT_OFFLINE=true",
			"COPILOT_PROVIDER_BASE_URL="+s.provider.BaseURL,
			"COPILOT_MODEL="+s.model,
		)
	}
	if s.githubToken != "" {
		env = append(env, tokenEnvVar+"="+s.githubToken)
	}
	return env
}

// args is the CLI's command line.
func (s settings) args() []string {
	args := []string{"--headless", "--no-auto-update", "--stdio"}
	if s.logLevel != "" {
		args = append(args, "--log-level", s.logLevel)
	}
	if s.auth == authToken {
		// Never fall back to a stored or ambient sign-in.
		args = append(args, "--no-auto-login")
		if s.githubToken != "" {
			args = append(args, "--auth-token-env", tokenEnvVar, "--secret-env-vars="+tokenEnvVar)
		}
	}
	return args
}

// nativeBinary returns the platform executable behind the npm package's
// Node.js loader, so the CLI runs without a Node.js process in between
// (one process to stop, and its exit status is the CLI's own). Any other
// path is returned as is.
func nativeBinary(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || filepath.Base(real) != "npm-loader.js" {
		return path
	}
	scope := filepath.Dir(filepath.Dir(real)) // node_modules/@github
	for _, pkg := range platformPackages() {
		p := filepath.Join(scope, pkg, "copilot")
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p
		}
	}
	return path
}

// platformPackages names the CLI's platform packages for this machine, in
// the order the npm loader tries them.
func platformPackages() []string {
	arch := runtime.GOARCH
	switch arch {
	case "amd64":
		arch = "x64"
	case "386":
		arch = "ia32"
	}
	if runtime.GOOS != "linux" {
		return []string{"copilot-" + runtime.GOOS + "-" + arch}
	}
	glibc, musl := "copilot-linux-"+arch, "copilot-linuxmusl-"+arch
	if matches, _ := filepath.Glob("/lib/ld-musl-*"); len(matches) > 0 {
		return []string{musl, glibc}
	}
	return []string{glibc, musl}
}
