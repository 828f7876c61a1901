package copilot

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/corral-dev/corral/internal/enginetest"
	"github.com/corral-dev/corral/internal/locate"
	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

// fakeOptions starts the test binary as a fake CLI in mode.
func fakeOptions(t *testing.T, mode string) engine.StartOptions {
	t.Helper()
	dir := t.TempDir()
	return engine.StartOptions{
		Dir:           dir,
		Cwd:           dir,
		ModelEndpoint: "http://127.0.0.1:9/v1", // never called by the fake
		Config:        map[string]string{locate.KeyPath: os.Args[0]},
		Host:          enginetest.NewHost(nil),
		Env:           []string{"PATH=" + os.Getenv("PATH"), fakeCLIEnv + "=" + mode},
		Logger:        zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
	}
}

func TestStartRefusesWhatItCannotSpeak(t *testing.T) {
	tests := []struct {
		mode   string
		want   []string
		stderr string
	}{
		{"protocol-2", []string{"copilot CLI 0.9.0 speaks protocol version 2", "needs protocol version 3"}, ""},
		{"no-version", []string{"copilot CLI 0.0.1 reports no protocol version", "needs protocol version 3"}, ""},
		{"exit-early", []string{"exited with status 3", "fatal: cannot start: no runtime found"}, "fatal: cannot start: no runtime found"},
		{"garbage", []string{"bad frame", `"Segmentation fault" has no colon`}, ""},
		// The CLI's request is answered with an explicit error, which the
		// fake reports back through its version string.
		{"ask-first", []string{"client answered: error -32601 method not found: userInput.request", "protocol version 99"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			t.Parallel()
			e := New()
			defer e.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err := e.Start(ctx, fakeOptions(t, tt.mode))
			var f *engine.Failure
			if !errors.As(err, &f) || f.Code != event.FailEngineError {
				t.Fatalf("Start = %v, want an engineError", err)
			}
			for _, want := range tt.want {
				if !strings.Contains(f.Error(), want) {
					t.Errorf("failure %q does not say %q", f.Error(), want)
				}
			}
			if tt.stderr != "" && (len(f.Stderr) == 0 || f.Stderr[len(f.Stderr)-1] != tt.stderr) {
				t.Errorf("stderr tail = %q, want it to end with %q", f.Stderr, tt.stderr)
			}
		})
	}
}

func TestStartFallsBackToPingForOldCLIs(t *testing.T) {
	t.Parallel()
	e := New()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	id, err := e.Start(ctx, fakeOptions(t, "old-ping"))
	if err != nil {
		t.Fatal(err)
	}
	if len(id) != 36 || id[14] != '4' {
		t.Fatalf("conversation id %q is not a random UUID", id)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := e.Turn(ctx, engine.TurnInput{Text: "x"}); err == nil {
		t.Fatal("Turn after Close succeeded")
	}
}

func TestCrashedCLIFailsTheTurnWithItsStderr(t *testing.T) {
	t.Parallel()
	e := New()
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Start(ctx, fakeOptions(t, "crash-on-send")); err != nil {
		t.Fatal(err)
	}
	_, err := e.Turn(ctx, engine.TurnInput{Text: "hello"})
	var f *engine.Failure
	if !errors.As(err, &f) || f.Code != event.FailEngineError {
		t.Fatalf("Turn = %v, want an engineError", err)
	}
	if !strings.Contains(f.Message, "exited with status 2") ||
		len(f.Stderr) != 2 || f.Stderr[0] != "panic: runtime error: invalid memory address" {
		t.Fatalf("failure = %q, stderr %q", f.Message, f.Stderr)
	}
}

func TestStartWithoutTheCLISaysHowToInstallIt(t *testing.T) {
	opts := fakeOptions(t, "unused")
	opts.Config = map[string]string{locate.KeyEnginesDir: t.TempDir()}
	opts.Env = []string{"PATH=" + t.TempDir()}
	t.Setenv("PATH", t.TempDir())
	_, err := New().Start(context.Background(), opts)
	if err == nil || !strings.Contains(err.Error(), "deploy/engines/install.sh") {
		t.Fatalf("Start = %v, want advice to run install.sh", err)
	}
}

func TestStartChecksItsOptions(t *testing.T) {
	base := func(t *testing.T) engine.StartOptions { return fakeOptions(t, "unused") }
	tests := []struct {
		name   string
		change func(*engine.StartOptions)
		want   string
		code   event.FailureCode
	}{
		{"no host", func(o *engine.StartOptions) { o.Host = nil }, "Host is required", ""},
		{"relative folder", func(o *engine.StartOptions) { o.Dir = "session" }, "must be an absolute path", ""},
		{"relative worktree", func(o *engine.StartOptions) { o.Cwd = "work" }, "must be an absolute path", ""},
		{"unknown auth", func(o *engine.StartOptions) { o.Config[ConfigAuth] = "magic" }, `auth is "magic"`, ""},
		{"unknown wire API", func(o *engine.StartOptions) { o.Config[ConfigWireAPI] = "messages" }, "wireApi", ""},
		{"unknown provider type", func(o *engine.StartOptions) { o.Config[ConfigProviderType] = "bedrock" }, "providerType", ""},
		{"endpoint not a URL", func(o *engine.StartOptions) { o.ModelEndpoint = "localhost:8080" }, "not an http(s) URL", ""},
		{"bad offline", func(o *engine.StartOptions) { o.Config[ConfigOffline] = "maybe" }, "offline", ""},
		{"relative cache", func(o *engine.StartOptions) { o.Config[ConfigCacheDir] = "cache" }, "cacheDir", ""},
		{"no token and no endpoint", func(o *engine.StartOptions) { o.ModelEndpoint = "" }, "no github-token credential", event.FailSignInExpired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := base(t)
			tt.change(&opts)
			_, err := New().Start(context.Background(), opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start = %v, want an error about %q", err, tt.want)
			}
			var f *engine.Failure
			if tt.code != "" && (!errors.As(err, &f) || f.Code != tt.code) {
				t.Fatalf("Start = %v, want failure code %s", err, tt.code)
			}
		})
	}
}

func TestSettingsForAnEndpointSession(t *testing.T) {
	dir := t.TempDir()
	opts := fakeOptions(t, "unused")
	opts.Dir = dir
	opts.Model = ""
	opts.ModelEndpoint = "http://127.0.0.1:8080/v1"
	opts.Credentials = map[string]string{"openai-api-key": "sk-gateway", "github-token": "ghp_x"}
	opts.Config[ConfigWireAPI] = "responses"
	opts.Env = []string{
		"PATH=/usr/bin", "HOME=/home/someone", "OPENAI_API_KEY=sk-inherited", "GITHUB_TOKEN=ghp_inherited",
		"COPILOT_HOME=/somewhere/else", "COPILOT_PROVIDER_API_KEY=sk-leak", tokenEnvVar + "=ghp_inherited", "XDG_CACHE_HOME=/elsewhere",
	}
	s, err := loadSettings(opts)
	if err != nil {
		t.Fatal(err)
	}
	if s.model != defaultEndpointModel || !s.offline {
		t.Fatalf("model %q offline %v", s.model, s.offline)
	}
	if *s.provider != (provider{Type: "openai", BaseURL: "http://127.0.0.1:8080/v1", APIKey: "sk-gateway", WireAPI: "responses"}) {
		t.Fatalf("provider = %+v", *s.provider)
	}
	want := []string{
		"PATH=/usr/bin", "HOME=/home/someone",
		"COPILOT_HOME=" + filepath.Join(dir, "engine", "copilot", "home"),
		"XDG_CACHE_HOME=" + filepath.Join(dir, "engine", "copilot", "cache"),
		"COPILOT_AUTO_UPDATE=false", "NO_COLOR=1",
		"COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:8080/v1", "COPILOT_MODEL=gpt-4.1",
		tokenEnvVar + "=ghp_x",
	}
	if strings.Join(s.env, "\n") != strings.Join(want, "\n") {
		t.Fatalf("env =\n%s\nwant\n%s", strings.Join(s.env, "\n"), strings.Join(want, "\n"))
	}
	args := strings.Join(s.args(), " ")
	if args != "--headless --no-auto-update --stdio --no-auto-login --auth-token-env "+tokenEnvVar+" --secret-env-vars="+tokenEnvVar {
		t.Fatalf("args = %s", args)
	}
}

func TestSettingsForTheCLIsOwnLogin(t *testing.T) {
	opts := fakeOptions(t, "unused")
	opts.ModelEndpoint = ""
	opts.Config[ConfigAuth] = "login"
	opts.Config[ConfigLogLevel] = "debug"
	opts.Credentials = map[string]string{"github-token": "ghp_not_used"}
	s, err := loadSettings(opts)
	if err != nil {
		t.Fatal(err)
	}
	if args := strings.Join(s.args(), " "); args != "--headless --no-auto-update --stdio --log-level debug" {
		t.Fatalf("args = %s", args)
	}
	for _, kv := range s.env {
		if strings.HasPrefix(kv, tokenEnvVar+"=") || strings.HasPrefix(kv, "COPILOT_OFFLINE=") {
			t.Fatalf("login mode env has %s", kv)
		}
	}
	if s.provider != nil {
		t.Fatalf("provider = %+v without an endpoint", s.provider)
	}
}

func TestNativeBinaryBypassesTheNodeLoader(t *testing.T) {
	root := t.TempDir()
	scope := filepath.Join(root, "node_modules", "@github")
	loader := filepath.Join(scope, "copilot", "npm-loader.js")
	native := filepath.Join(scope, platformPackages()[0], "copilot")
	bin := filepath.Join(root, "node_modules", ".bin", "copilot")
	for _, p := range []string{loader, native, bin} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(loader, []byte("#!/usr/bin/env node\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join("..", "@github", "copilot", "npm-loader.js"), bin); err != nil {
		t.Fatal(err)
	}
	// Without the platform package the loader itself runs.
	if got := nativeBinary(bin); got != bin {
		t.Fatalf("nativeBinary without a platform package = %s, want %s", got, bin)
	}
	if err := os.WriteFile(native, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := nativeBinary(bin); got != native {
		t.Fatalf("nativeBinary = %s, want %s", got, native)
	}
	other := filepath.Join(root, "copilot-wrapper")
	if err := os.WriteFile(other, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := nativeBinary(other); got != other {
		t.Fatalf("nativeBinary of an unrelated file = %s", got)
	}
}

func TestPricesTakeTheLongestPrefix(t *testing.T) {
	tests := []struct {
		usage event.UsageData
		want  float64
	}{
		{event.UsageData{Model: "gpt-4.1", InputTokens: 1_000_000, OutputTokens: 1_000_000}, 2.00 + 8.00},
		{event.UsageData{Model: "gpt-4.1-mini-2025-04-14", InputTokens: 1_000_000}, 0.40},
		{event.UsageData{Model: "GPT-4.1", InputTokens: 1_000_000, CacheReadTokens: 1_000_000}, 0.50},
		{event.UsageData{Model: "claude-sonnet-4.5", InputTokens: 500_000, CacheReadTokens: 100_000, CacheWriteTokens: 1_000_000}, 0.4*3.00 + 0.1*0.30 + 3.75},
		{event.UsageData{Model: "claude-opus-4.5", OutputTokens: 1_000_000}, 25.00},
		{event.UsageData{Model: "claude-opus-4.1", OutputTokens: 1_000_000}, 75.00},
		{event.UsageData{Model: "my-local-llama", InputTokens: 1_000_000}, 0},
		{event.UsageData{Model: "gpt-4.1", InputTokens: 10, CacheReadTokens: 20}, 20 * 0.50 / 1e6},
	}
	for _, tt := range tests {
		got := estimateCost(tt.usage)
		if diff := got - tt.want; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("estimateCost(%+v) = %v, want %v", tt.usage, got, tt.want)
		}
	}
}

func TestSessionErrorsMapToFailureCodes(t *testing.T) {
	tests := []struct {
		in   sessionErrorData
		code event.FailureCode
	}{
		{sessionErrorData{ErrorType: "authentication", StatusCode: 401, Message: "Authentication failed"}, event.FailSignInExpired},
		{sessionErrorData{ErrorType: "query", StatusCode: 401}, event.FailSignInExpired},
		{sessionErrorData{ErrorType: "query", Message: "Execution failed: InvalidArg, No GitHub OAuth token or Copilot HMAC key provided"}, event.FailSignInExpired},
		{sessionErrorData{ErrorType: "context_limit"}, event.FailContextFull},
		{sessionErrorData{ErrorType: "rate_limit", StatusCode: 429, Message: "slow down"}, event.FailEngineError},
		{sessionErrorData{ErrorType: "authorization", StatusCode: 403}, event.FailEngineError},
	}
	for _, tt := range tests {
		f := sessionFailure(tt.in)
		if f.Code != tt.code || !strings.HasPrefix(f.Message, "copilot: ") {
			t.Errorf("sessionFailure(%+v) = %+v, want code %s", tt.in, f, tt.code)
		}
	}
}

// TestCloseLeavesNothingRunning starts, fails a turn and closes an engine,
// then checks that every goroutine it started has ended. It does not run
// in parallel, so the count is this test's alone.
func TestCloseLeavesNothingRunning(t *testing.T) {
	before := runtime.NumGoroutine()
	e := New().(*Engine)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e.Start(ctx, fakeOptions(t, "old-ping")); err != nil {
		t.Fatal(err)
	}
	// The fake answers session.send with method-not-found.
	if _, err := e.Turn(ctx, engine.TurnInput{Text: "hello"}); err == nil || !strings.Contains(err.Error(), "method not found") {
		t.Fatalf("Turn = %v, want the CLI's error", err)
	}
	e.mu.Lock()
	pid := e.cli.pid()
	e.mu.Unlock()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if !waitProcessGone(pid) {
		t.Fatalf("the CLI %d outlived Close", pid)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}
