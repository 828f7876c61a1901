package supervisor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/fakemodel"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/api"
)

// realEngineManager is a Manager whose runner is the real one, with the
// pinned agent CLIs and credentials in the keyring (go-keyring's mock).
func realEngineManager(t *testing.T, secrets map[string]string) (*Manager, string) {
	t.Helper()
	enginesDir := testenv.NeedEngineCLI(t, "claude")
	testenv.NeedEngineCLI(t, "codex")
	testenv.NeedEngineCLI(t, "copilot")
	_, runner := realBinaries(t)
	keyring.MockInit()
	store := creds.NewKeyring(creds.OSKeyring{})
	for item, secret := range secrets {
		if err := store.Set(item, secret); err != nil {
			t.Fatal(err)
		}
	}
	tmp := t.TempDir()
	m, err := New(Config{
		StateDir: t.TempDir(), RunnerPath: runner, Logger: zaptest.NewLogger(t),
		Env:         []string{locate.EnvEnginesDir + "=" + enginesDir, "HOME=" + t.TempDir(), "TMPDIR=" + tmp},
		Credentials: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown(context.Background()) })
	return m, tmp
}

func engineByName(t *testing.T, r api.EnginesReply, name string) api.Engine {
	t.Helper()
	for _, e := range r.Engines {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("no engine %s in %+v", name, r.Engines)
	return api.Engine{}
}

func check(e api.Engine, name string) api.EngineCheck {
	for _, c := range e.Checks {
		if c.Name == name {
			return c
		}
	}
	return api.EngineCheck{}
}

// GET /v1/engines, through the real runner and the pinned CLIs: each CLI
// found with its version, the credentials each engine needs present or
// missing (and the reason names the item), the models and settings the
// catalog declares, and the answer kept until a credential changes.
//
// The probes run the CLIs, which on a loaded machine take tens of seconds
// to answer --version: the calls are bounded by the probe's own limits
// (engineprobe.PerEngine), not by a shorter one of the test's.
func TestEnginesReportsReadiness(t *testing.T) {
	m, _ := realEngineManager(t, map[string]string{creds.AnthropicAPIKey: "sk-ant-probe"})
	enginesDir := testenv.NeedEngineCLI(t, "claude")
	r, err := m.Engines(t.Context(), EnginesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	script := engineByName(t, r, "script")
	if !script.Ready || script.CLI != nil || len(script.Models) == 0 {
		t.Errorf("script: %+v", script)
	}
	claude := engineByName(t, r, "claude")
	if !claude.Ready || claude.CLI == nil || claude.CLI.Version != pinnedVersion(t, enginesDir, "@anthropic-ai/claude-code") || claude.CLI.Source != "pinned" {
		t.Errorf("claude: %+v %+v", claude, claude.CLI)
	}
	if c := check(claude, "accepted"); c.Status != api.CheckSkipped {
		t.Errorf("claude's accepted check ran without being asked: %+v", c)
	}
	if len(claude.Credentials) != 1 || !claude.Credentials[0].Set {
		t.Errorf("claude credentials: %+v", claude.Credentials)
	}
	codex := engineByName(t, r, "codex")
	if codex.Ready || !strings.Contains(codex.Reason, "openai-api-key") || codex.CLI == nil || codex.CLI.Version != pinnedVersion(t, enginesDir, "@openai/codex") {
		t.Errorf("codex without a key: %+v %+v", codex, codex.CLI)
	}
	if len(codex.Settings) == 0 || codex.Settings[0].Key != "path" {
		t.Errorf("codex settings: %+v", codex.Settings)
	}
	copilot := engineByName(t, r, "copilot")
	if copilot.Ready || !strings.Contains(copilot.Reason, "github-token") || copilot.CLI == nil || copilot.CLI.Version == "" {
		t.Errorf("copilot without a token: %+v %+v", copilot, copilot.CLI)
	}

	// Kept: the same answer, until asked to refresh or a credential
	// changes.
	again, err := m.Engines(t.Context(), EnginesOptions{})
	if err != nil || !again.CheckedAt.Equal(r.CheckedAt) {
		t.Fatalf("a second call probed again (%v, %v): %v", r.CheckedAt, again.CheckedAt, err)
	}
	if err := m.cfg.Credentials.(*creds.Secrets).Set(creds.OpenAIAPIKey, "sk-openai-probe"); err != nil {
		t.Fatal(err)
	}
	after, err := m.Engines(t.Context(), EnginesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !engineByName(t, after, "codex").Ready {
		t.Fatalf("codex after its key was set: %+v", engineByName(t, after, "codex"))
	}
}

// check=accepted tries each key against the model endpoint: the fake model
// server accepts its own key and refuses any other.
func TestEnginesAcceptedCheck(t *testing.T) {
	srv := fakemodel.New(fakemodel.Scenario{Auth: &fakemodel.Auth{APIKey: "sk-good"}})
	url, err := srv.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	m, tmp := realEngineManager(t, map[string]string{creds.AnthropicAPIKey: "sk-good", creds.OpenAIAPIKey: "sk-bad"})
	r, err := m.Engines(t.Context(), EnginesOptions{Accept: true, ModelEndpoint: url})
	if err != nil {
		t.Fatal(err)
	}
	claude := engineByName(t, r, "claude")
	if c := check(claude, "accepted"); c.Status != api.CheckOK || !claude.Ready {
		t.Errorf("claude with the server's key: %+v", claude.Checks)
	}
	codex := engineByName(t, r, "codex")
	if c := check(codex, "accepted"); c.Status != api.CheckFailed || !strings.Contains(c.Detail, "HTTP 401") || codex.Ready {
		t.Errorf("codex with a key the server refuses: %+v", codex.Checks)
	}
	// Copilot pointed at an endpoint uses the openai-api-key as its
	// provider's key.
	copilot := engineByName(t, r, "copilot")
	if c := check(copilot, "accepted"); c.Status != api.CheckFailed || !strings.Contains(c.Detail, "HTTP 401") {
		t.Errorf("copilot with a provider key the server refuses: %+v", copilot.Checks)
	}
	var models int
	for _, req := range srv.Requests() {
		if strings.HasSuffix(req.Path, "/models") {
			models++
		}
	}
	if models != 3 {
		t.Errorf("the server saw %d model-list requests, want one per key tried (3)", models)
	}
	// No probe left a folder behind.
	if left, _ := filepath.Glob(filepath.Join(tmp, "corral-*-probe-*")); len(left) > 0 {
		t.Errorf("probe folders left behind: %v", left)
	}
}

// pinnedVersion is the version of npm package pkg that the project pins in
// enginesDir's package.json (deploy/engines), which the probe must report.
func pinnedVersion(t *testing.T, enginesDir, pkg string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(enginesDir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var manifest struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &manifest); err != nil || manifest.Dependencies[pkg] == "" {
		t.Fatalf("%s pins no %s: %v", enginesDir, pkg, err)
	}
	return manifest.Dependencies[pkg]
}
