package codex

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/event"
)

func TestShellScriptUnwrapsTheLoginShell(t *testing.T) {
	cases := []struct{ name, command, want string }{
		{"recorded approval", "/bin/bash -lc 'echo hello > hello.txt && cat hello.txt'", "echo hello > hello.txt && cat hello.txt"},
		{"bare word", "/bin/bash -lc cat", "cat"},
		{"quotes inside", `/bin/bash -lc 'printf '"'"'hi\n'"'"' > x'`, `printf 'hi\n' > x`},
		{"double quoted", `bash -c "echo \"a\" \$HOME"`, `echo "a" $HOME`},
		{"sh -c", "sh -c 'ls -la'", "ls -la"},
		{"not a wrapper", "ls -la", "ls -la"},
		{"expansion is kept whole", `/bin/bash -lc "$(curl x)"`, `/bin/bash -lc "$(curl x)"`},
		{"two commands are kept whole", "/bin/bash -lc 'a'; rm -rf /", "/bin/bash -lc 'a'; rm -rf /"},
		{"redirection is kept whole", "/bin/bash -lc 'a' > out", "/bin/bash -lc 'a' > out"},
		{"other interpreter", "python3 -c 'print(1)'", "python3 -c 'print(1)'"},
		{"unparsable", "/bin/bash -lc 'unterminated", "/bin/bash -lc 'unterminated"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := shellScript(tc.command); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStdinTextIsWhatReachesTheProcess(t *testing.T) {
	// Recorded from codex-cli 0.169 for write_stdin to an escalated shell.
	got := stdinText("write_stdin --session-id 30951 'touch /tmp/x\n'")
	if got != "touch /tmp/x\n" {
		t.Errorf("got %q", got)
	}
	if got := stdinText("something else"); got != "something else" {
		t.Errorf("got %q", got)
	}
}

func TestNewSettings(t *testing.T) {
	base := func() engine.StartOptions {
		return engine.StartOptions{Credentials: map[string]string{CredentialItem: "k"}, Config: map[string]string{}}
	}
	t.Run("api key without endpoint uses the OpenAI API", func(t *testing.T) {
		s, err := newSettings(base())
		if err != nil || !s.Provider || s.BaseURL != defaultBaseURL || s.KeyEnv != apiKeyEnv {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("endpoint without a path gets /v1", func(t *testing.T) {
		o := base()
		o.ModelEndpoint = "http://127.0.0.1:4000"
		s, err := newSettings(o)
		if err != nil || s.BaseURL != "http://127.0.0.1:4000/v1" {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("endpoint path is kept", func(t *testing.T) {
		o := base()
		o.ModelEndpoint = "https://gw.example/openai/v1/"
		s, err := newSettings(o)
		if err != nil || s.BaseURL != "https://gw.example/openai/v1" {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("no key and no endpoint is an error naming the item", func(t *testing.T) {
		o := base()
		o.Credentials = nil
		if _, err := newSettings(o); err == nil || !strings.Contains(err.Error(), CredentialItem) {
			t.Fatalf("err %v", err)
		}
	})
	t.Run("login uses the built-in provider", func(t *testing.T) {
		o := base()
		o.Credentials = nil
		o.Config[KeyAuth] = authLogin
		s, err := newSettings(o)
		if err != nil || s.Provider || s.KeyEnv != "" {
			t.Fatalf("%+v %v", s, err)
		}
	})
	t.Run("login with an endpoint sends the login", func(t *testing.T) {
		o := base()
		o.Config[KeyAuth] = authLogin
		o.ModelEndpoint = "https://gw.example/v1"
		s, err := newSettings(o)
		if err != nil || !s.Provider || !s.LoginAuth || s.KeyEnv != "" {
			t.Fatalf("%+v %v", s, err)
		}
	})
	for name, mutate := range map[string]func(*engine.StartOptions){
		"bad auth":         func(o *engine.StartOptions) { o.Config[KeyAuth] = "magic" },
		"bad retries":      func(o *engine.StartOptions) { o.Config[KeyRequestMaxRetries] = "-1" },
		"zero idle":        func(o *engine.StartOptions) { o.Config[KeyStreamIdleTimeoutMS] = "0" },
		"ftp endpoint":     func(o *engine.StartOptions) { o.ModelEndpoint = "ftp://x" },
		"endpoint w/ user": func(o *engine.StartOptions) { o.ModelEndpoint = "https://u:p@x/v1" },
		"relative":         func(o *engine.StartOptions) { o.ModelEndpoint = "/v1" },
	} {
		t.Run(name, func(t *testing.T) {
			o := base()
			mutate(&o)
			if _, err := newSettings(o); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestRenderConfigHoldsEveryTrapFix(t *testing.T) {
	conf := string(renderConfig(settings{Model: `gpt-5.5"x`, Provider: true, BaseURL: "http://127.0.0.1:1/v1", KeyEnv: apiKeyEnv, RequestRetries: 2, StreamRetries: 1, StreamIdleMS: 5000}))
	for _, want := range []string{
		`model = "gpt-5.5\"x"`,
		`model_provider = "corral"`,
		`approval_policy = "on-request"`, // "untrusted" is fatal in 0.169
		`approvals_reviewer = "user"`,
		`sandbox_mode = "read-only"`,
		`web_search = "disabled"`,
		"check_for_update_on_startup = false",
		`exclude = ["CORRAL_OPENAI_API_KEY"]`,
		"[agents]\nenabled = false",
		"[analytics]\nenabled = false",
		"plugins = false",
		"unbounded_connection_retries = false",
		"hooks = false",
		`base_url = "http://127.0.0.1:1/v1"`,
		`env_key = "CORRAL_OPENAI_API_KEY"`,
		`wire_api = "responses"`, // "chat" falls back to the default provider
		"request_max_retries = 2",
		"stream_max_retries = 1",
		"stream_idle_timeout_ms = 5000",
	} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, "untrusted") || strings.Contains(conf, "multi_agent") {
		t.Errorf("config holds a setting 0.169 rejects:\n%s", conf)
	}
	login := string(renderConfig(settings{}))
	if strings.Contains(login, "model_providers") || strings.Contains(login, "model_provider =") {
		t.Errorf("a login session must use the built-in provider:\n%s", login)
	}
}

func TestPrepareHomeCopiesTheLoginOnlyWhenChosen(t *testing.T) {
	loginHome := t.TempDir()
	writeFile(t, filepath.Join(loginHome, "auth.json"), `{"tokens":{}}`)
	home := filepath.Join(t.TempDir(), "engine", "codex")
	opts := engine.StartOptions{Config: map[string]string{KeyAuth: authLogin, KeyLoginHome: loginHome}}
	if err := prepareHome(home, settings{}, opts, nil); err != nil {
		t.Fatal(err)
	}
	checkFile(t, filepath.Join(home, "auth.json"), `{"tokens":{}}`)
	if fi, _ := os.Stat(filepath.Join(home, "config.toml")); fi.Mode().Perm() != 0o600 {
		t.Errorf("config.toml mode %v", fi.Mode().Perm())
	}
	other := filepath.Join(t.TempDir(), "h")
	if err := prepareHome(other, settings{}, engine.StartOptions{Config: map[string]string{}}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(other, "auth.json")); !os.IsNotExist(err) {
		t.Error("an API-key session got a copy of the CLI's login")
	}
	opts.Config[KeyLoginHome] = t.TempDir()
	if err := prepareHome(home, settings{}, opts, nil); err == nil || !strings.Contains(err.Error(), "codex login") {
		t.Errorf("missing login: %v", err)
	}
}

func TestChildEnvDropsInheritedCredentials(t *testing.T) {
	env := childEnv([]string{"PATH=/bin", "OPENAI_API_KEY=leak", "CODEX_HOME=/elsewhere", "HOME=/h"}, "/s/engine/codex", "k")
	joined := strings.Join(env, " ")
	for _, bad := range []string{"leak", "/elsewhere"} {
		if strings.Contains(joined, bad) {
			t.Errorf("env %v keeps %s", env, bad)
		}
	}
	for _, want := range []string{"CODEX_HOME=/s/engine/codex", apiKeyEnv + "=k", "PATH=/bin"} {
		if !strings.Contains(joined, want) {
			t.Errorf("env %v lacks %s", env, want)
		}
	}
	if e := childEnv([]string{"PATH=/bin"}, "/h", ""); strings.Contains(strings.Join(e, " "), apiKeyEnv) {
		t.Error("an empty key was set")
	}
}

func TestTurnFailureMapping(t *testing.T) {
	s := func(v string) *string { return &v }
	cases := []struct {
		name string
		te   *turnError
		code event.FailureCode
		want string
	}{
		{"401 as a connection failure", &turnError{Message: "unexpected status 401 Unauthorized: bad key", CodexErrorInfo: json.RawMessage(`{"httpConnectionFailed":{"httpStatusCode":401}}`)}, event.FailSignInExpired, "401"},
		{"unauthorized", &turnError{Message: "nope", CodexErrorInfo: json.RawMessage(`"unauthorized"`)}, event.FailSignInExpired, "nope"},
		{"context window", &turnError{Message: "too long", CodexErrorInfo: json.RawMessage(`"contextWindowExceeded"`)}, event.FailContextFull, "too long"},
		{"500", &turnError{Message: "We’re currently experiencing high demand", CodexErrorInfo: json.RawMessage(`"internalServerError"`)}, event.FailEngineError, "internalServerError"},
		{"dead endpoint", &turnError{Message: "Connection failed: error sending request", CodexErrorInfo: json.RawMessage(`{"httpConnectionFailed":{"httpStatusCode":null}}`)}, event.FailEngineError, "httpConnectionFailed"},
		{"details appended", &turnError{Message: "Reconnecting", AdditionalDetails: s("stream closed"), CodexErrorInfo: json.RawMessage(`"other"`)}, event.FailEngineError, "stream closed"},
		{"odd info", &turnError{Message: "m", CodexErrorInfo: json.RawMessage(`[1]`)}, event.FailEngineError, "other"},
		{"no error", nil, event.FailEngineError, "without an error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := turnFailure(tc.te)
			if f.Code != tc.code || !strings.Contains(f.Message, tc.want) {
				t.Errorf("got %s %q, want %s containing %q", f.Code, f.Message, tc.code, tc.want)
			}
		})
	}
}

func TestWarningsThatFailTheSession(t *testing.T) {
	for summary, benign := range map[string]bool{
		"Codex could not find bubblewrap on PATH. Install bubblewrap with your OS package manager.": true,
		"Project-local config, hooks, and exec policies are disabled in the following folders":      true,
		"Invalid configuration; using defaults.":                                                    false,
		"Codex is ignoring 2 unrecognized configuration settings.":                                  false,
		"": false,
	} {
		if got := isBenignWarning(configWarning{Summary: summary}); got != benign {
			t.Errorf("%q: benign %v, want %v", summary, got, benign)
		}
	}
	d := "config.toml:17:12: `wire_api = \"chat\"` is no longer supported."
	if f := warningFailure(configWarning{Summary: "Invalid configuration; using defaults.", Details: &d}); f.Code != event.FailEngineError || !strings.Contains(f.Message, "wire_api") {
		t.Errorf("failure %+v", f)
	}
}

func TestRetryData(t *testing.T) {
	details := "stream disconnected before completion"
	d := retryData(errorNotification{Error: turnError{Message: "Reconnecting... 2/5", AdditionalDetails: &details}, WillRetry: true}, 7)
	if d.Attempt != 2 || d.MaxRetries != 5 || d.Error != details {
		t.Errorf("%+v", d)
	}
	d = retryData(errorNotification{Error: turnError{Message: "Reconnecting"}}, 3)
	if d.Attempt != 3 || d.MaxRetries != 0 || d.Error != "Reconnecting" {
		t.Errorf("%+v", d)
	}
}

func TestUsageFigures(t *testing.T) {
	u := callUsage(tokenBreakdown{TotalTokens: 1020, InputTokens: 1000, CachedInputTokens: 100, OutputTokens: 20})
	if u.InputTokens != 900 || u.CacheReadTokens != 100 || u.OutputTokens != 20 || !u.Estimated {
		t.Errorf("%+v", u)
	}
	p, ok, err := priceFor("gpt-5.5", nil)
	if err != nil || !ok {
		t.Fatalf("%v %v", ok, err)
	}
	if got, want := p.Cost(u), (900*1.25+100*0.125+20*10.0)/1e6; got != want {
		t.Errorf("cost %v, want %v", got, want)
	}
	p, ok, err = priceFor("local-llama", map[string]string{KeyInputPrice: "1", KeyOutputPrice: "2"})
	if err != nil || !ok || p.Input != 1 || p.Output != 2 || p.CachedInput != 0 {
		t.Errorf("override %+v %v %v", p, ok, err)
	}
	if _, ok, _ := priceFor("local-llama", nil); ok {
		t.Error("an unknown model was priced")
	}
	if _, _, err := priceFor("gpt-5.5", map[string]string{KeyOutputPrice: "cheap"}); err == nil {
		t.Error("a bad price was accepted")
	}
	c, ok := contextData(tokenBreakdown{TotalTokens: 2584}, 258400)
	if !ok || c.Percent != 1 || c.UsedTokens != 2584 {
		t.Errorf("context %+v", c)
	}
	if _, ok := contextData(tokenBreakdown{TotalTokens: 5}, 0); ok {
		t.Error("context without a window")
	}
}

func TestCheckVersion(t *testing.T) {
	dir := t.TempDir()
	script := func(name, out string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, want := range []string{"0.169.3", "0.171.0"} {
		if v, err := checkVersion(context.Background(), script("ok"+want, "codex-cli "+want), nil); err != nil || v != want {
			t.Errorf("%s: %q %v", want, v, err)
		}
	}
	for name, out := range map[string]string{"newer": "codex-cli 0.172.0", "older": "codex-cli 0.163.0", "other": "claude 2.1.328"} {
		_, err := checkVersion(context.Background(), script(name, out), nil)
		if err == nil || !strings.Contains(err.Error(), supportedRange) || !strings.Contains(err.Error(), strings.Fields(out)[len(strings.Fields(out))-1]) {
			t.Errorf("%s: %v, want an error naming what was found and %s", name, err, supportedRange)
		}
	}
}

func TestStartFailsClearlyWithoutAUsableCLI(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, "codex-old")
	if err := os.WriteFile(old, []byte("#!/bin/sh\necho 'codex-cli 0.150.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"missing": filepath.Join(dir, "nope"), "unsupported": old} {
		t.Run(name, func(t *testing.T) {
			opts := engine.StartOptions{
				Dir: t.TempDir(), Cwd: t.TempDir(), Credentials: map[string]string{CredentialItem: "k"},
				Config: map[string]string{"path": path}, Host: nopHost{}, Env: []string{"PATH=/usr/bin:/bin"},
			}
			eng := New()
			defer eng.Close()
			_, err := eng.Start(context.Background(), opts)
			f := wantFailure(t, err, event.FailEngineError)
			if !strings.Contains(f.Message, path) {
				t.Errorf("failure %q does not name %s", f.Message, path)
			}
		})
	}
}

type nopHost struct{}

func (nopHost) Emit(event.Type, any) {}
func (nopHost) Permit(context.Context, engine.ToolCall) engine.Verdict {
	return engine.Verdict{}
}
func (nopHost) TakeSteers(string) []string { return nil }

func TestNativeBinaryResolvesTheNpmLauncher(t *testing.T) {
	target, ok := npmTargets[runtime.GOOS+"/"+runtime.GOARCH]
	if !ok {
		// No npm build for this platform: nothing is ever resolved.
		if _, _, ok := nativeBinary(os.Args[0]); ok {
			t.Fatal("resolved a binary on a platform without an npm build")
		}
		return
	}
	nm := filepath.Join(t.TempDir(), "node_modules")
	launcher := filepath.Join(nm, "@openai", "codex", "bin", "codex.js")
	native := filepath.Join(nm, "@openai", target.pkg, "vendor", target.triple, "bin", "codex")
	for _, p := range []string{launcher, native} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin := filepath.Join(nm, ".bin", "codex")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	if err := os.Symlink("../@openai/codex/bin/codex.js", bin); err != nil {
		t.Fatal(err)
	}
	got, env, ok := nativeBinary(bin)
	if !ok || got != native {
		t.Fatalf("nativeBinary = %q %v, want %q", got, ok, native)
	}
	if len(env) != 2 || !strings.HasPrefix(env[1], "CODEX_MANAGED_PACKAGE_ROOT=") {
		t.Errorf("env %v", env)
	}
	if _, _, ok := nativeBinary(native); ok {
		t.Error("a native binary was resolved again")
	}
	os.Remove(native)
	if _, _, ok := nativeBinary(bin); ok {
		t.Error("a missing native binary was returned")
	}
}

func TestWithEnvReplaces(t *testing.T) {
	got := withEnv([]string{"A=1", "B=2"}, "A=3", "C=4")
	if strings.Join(got, ",") != "B=2,A=3,C=4" {
		t.Errorf("%v", got)
	}
}
