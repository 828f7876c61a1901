package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/testrunner"
	"github.com/corral-dev/corral/pkg/wire"
)

// A runner the supervisor starts gets, from the OS keyring (go-keyring's
// mock provider here), the credentials its session's engine uses and no
// others; no secret reaches a file or a log.
func TestRunnersGetTheirEnginesCredentialsFromTheKeyring(t *testing.T) {
	keyring.MockInit()
	secrets := map[string]string{
		creds.AnthropicAPIKey: "sk-ant-test-very-secret-value",
		creds.OpenAIAPIKey:    "sk-openai-test-very-secret-value",
		creds.GitHubToken:     "ghp_test_very_secret_value",
	}
	store := creds.NewKeyring(creds.OSKeyring{})
	for item, secret := range secrets {
		if err := store.Set(item, secret); err != nil {
			t.Fatal(err)
		}
	}
	core, logs := observer.New(zap.DebugLevel)
	m := newScriptManager(t, testrunner.Credentials, func(c *Config) {
		c.Credentials = store
		c.Logger = zap.New(core)
	})
	cases := []struct {
		engine string
		want   []string // items, in any order
	}{
		{"claude", []string{creds.AnthropicAPIKey}},
		{"codex", []string{creds.OpenAIAPIKey}},
		{"copilot", []string{creds.GitHubToken, creds.OpenAIAPIKey, creds.AnthropicAPIKey}},
		{"script", nil},
		{"acp", creds.Items},       // credentialEnv may name any item
		{"my-plugin", creds.Items}, // a plugin's needs are unknown: every item, as before
	}
	// The fault in front of the runner names what live.ensure carried. A
	// session whose engine's CLI is missing fails to start after that;
	// the script session starts.
	for _, tc := range cases {
		_, err := m.Create(ctxT(t), wire.Spec{Engine: tc.engine})
		if tc.engine == "script" && err != nil {
			t.Fatal(err)
		}
	}
	// Every runner's stderr has been read once they are all gone.
	if err := m.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		got := credentialsReceived(t, logs, tc.engine)
		var names []string
		if got != "" {
			names = strings.Split(got, ",")
		}
		want := slices.Sorted(slices.Values(tc.want))
		if !slices.Equal(names, want) {
			t.Errorf("the runner of a %s session received %v, want exactly %v", tc.engine, names, want)
		}
	}
	for _, e := range logs.All() {
		for _, secret := range secrets {
			if strings.Contains(e.Message+toString(e.ContextMap()), secret) {
				t.Fatalf("secret in log entry %q", e.Message)
			}
		}
	}
	filepath.Walk(m.cfg.StateDir, func(path string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			raw, _ := os.ReadFile(path)
			for _, secret := range secrets {
				if strings.Contains(string(raw), secret) {
					t.Errorf("secret written to %s", path)
				}
			}
		}
		return nil
	})
}

// A keyring that cannot be read (no Secret Service on this host) does not
// stop a session from starting: the supervisor says why in its log, and the
// runner starts without credentials, so the engine reports what it misses.
func TestUnreadableKeyringStillStartsTheSession(t *testing.T) {
	keyring.MockInitWithError(errNoSecretService)
	core, logs := observer.New(zap.DebugLevel)
	m := newScriptManager(t, testrunner.Credentials, func(c *Config) {
		c.Credentials = creds.NewKeyring(creds.OSKeyring{})
		c.Logger = zap.New(core)
	})
	// The runner is asked to open the session, without credentials (the
	// engine then says what it misses, or fails for want of its CLI).
	m.Create(ctxT(t), wire.Spec{Engine: "claude"})
	if err := m.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if got := credentialsReceived(t, logs, "claude"); got != "" {
		t.Fatalf("the runner received %q, want live.ensure without credentials", got)
	}
	warned := logs.FilterMessage("credentials not read").All()
	if len(warned) == 0 {
		t.Fatal("no log line says the keyring could not be read")
	}
	if msg, _ := warned[0].ContextMap()["error"].(string); !strings.Contains(msg, "anthropic-api-key") || !strings.Contains(msg, "--credentials FILE") {
		t.Fatalf("the warning %q should name the item and the way out", msg)
	}
}

// credentialsReceived is what the Credentials fault said live.ensure
// carried for a session on engine: the names, comma-separated, of each
// start, separated by semicolons. It fails the test if no start reached
// the runner.
func credentialsReceived(t *testing.T, logs *observer.ObservedLogs, engine string) string {
	t.Helper()
	var got []string
	for _, e := range logs.FilterMessage("runner stderr").All() {
		line, _ := e.ContextMap()["line"].(string)
		if names, ok := strings.CutPrefix(line, testrunner.CredentialsReceived+engine+":"); ok {
			got = append(got, strings.TrimSpace(names))
		}
	}
	if len(got) == 0 {
		t.Fatalf("no session on %s reached the runner", engine)
	}
	return strings.Join(got, ";")
}

var errNoSecretService = &noBusError{}

type noBusError struct{}

func (*noBusError) Error() string {
	return "failed to unlock correct collection '/org/freedesktop/secrets/aliases/default': The name org.freedesktop.secrets was not provided by any .service files"
}
