package doctor

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/testport"
	natsserver "github.com/nats-io/nats-server/v2/server"
)

// healthy is a setup where every check passes: a private state folder, a
// roomy disk, a runner, a fake claude CLI in a pinned install, and its
// credential in a file. Each test breaks one thing.
func healthy(t *testing.T) Config {
	t.Helper()
	base := t.TempDir()
	state := filepath.Join(base, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	engines := filepath.Join(base, "engines")
	bin := filepath.Join(engines, "node_modules", ".bin")
	os.MkdirAll(bin, 0o755)
	writeScript(t, filepath.Join(bin, "claude"), "#!/bin/sh\necho '2.1.328 (Claude Code)'\n")
	runner := filepath.Join(base, "runner")
	writeScript(t, runner, "#!/bin/sh\n")
	credsFile := filepath.Join(base, "creds.json")
	os.WriteFile(credsFile, []byte(`{"`+creds.AnthropicAPIKey+`":"sk-test"}`), 0o600)
	return Config{
		StateDir:        state,
		RunnerPath:      runner,
		EnginesDir:      engines,
		Engines:         []string{"claude"},
		CredentialsFile: credsFile,
		Statfs:          func(string) (uint64, uint64, error) { return 50 << 30, 100 << 30, nil },
		Keyring:         func() (map[string]string, error) { return nil, errors.New("no keyring in tests") },
		Cgroups:         func() error { return nil },
		Timeout:         30 * time.Second,
	}
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
}

// result returns the result of check, failing the test when there is none.
func result(t *testing.T, rs []Result, check string) Result {
	t.Helper()
	for _, r := range rs {
		if r.Check == check {
			return r
		}
	}
	t.Fatalf("no %q among %+v", check, rs)
	return Result{}
}

func TestAHealthySetupPassesEveryCheck(t *testing.T) {
	cfg := healthy(t)
	rs := Run(context.Background(), cfg)
	for _, r := range rs {
		if r.Status != OK {
			t.Errorf("%s: %s: %s (fix: %s)", r.Check, r.Status, r.Detail, r.Fix)
		}
	}
	if Failed(rs) {
		t.Fatal("Failed on a healthy setup")
	}
	if r := result(t, rs, "engine claude"); !strings.Contains(r.Detail, "2.1.328 (Claude Code)") || !strings.Contains(r.Detail, "pinned") || !strings.Contains(r.Detail, "supported") {
		t.Errorf("engine check does not give the version, where, and that it is supported: %q", r.Detail)
	}
}

// TestACLIsFirstRunMayOutlastTheDialTimeout: a CLI unpacking itself on
// its first run (the Copilot CLI, about 235 MB) answers --version late;
// the doctor waits for it (CLITimeout) rather than failing after the
// dial timeout.
func TestACLIsFirstRunMayOutlastTheDialTimeout(t *testing.T) {
	cfg := healthy(t)
	marker := filepath.Join(t.TempDir(), "unpacked")
	// The first run "unpacks" until the dial timeout has surely passed:
	// it waits for a file that only the test's own timer creates.
	writeScript(t, filepath.Join(cfg.EnginesDir, "node_modules", ".bin", "claude"),
		"#!/bin/sh\nwhile [ ! -e "+marker+" ]; do sleep 0.05; done\necho '2.1.328 (Claude Code)'\n")
	cfg.Timeout = 100 * time.Millisecond
	time.AfterFunc(3*cfg.Timeout, func() { os.WriteFile(marker, nil, 0o600) })
	rs := Run(context.Background(), cfg)
	if r := result(t, rs, "engine claude"); r.Status != OK {
		t.Fatalf("a CLI that answers after the dial timeout: %s %q", r.Status, r.Detail)
	}
}

func TestEachBrokenSetupFailsItsCheckAndSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		breakT func(t *testing.T, c *Config)
		check  string
		status Status
		detail string
		fix    string
	}{
		{"state folder of another user", func(t *testing.T, c *Config) {
			c.WhoAmI = func() int { return os.Getuid() + 4242 }
		}, "state folder", Fail, "belongs to uid", "chown"},
		{"state folder open to everyone", func(t *testing.T, c *Config) {
			os.Chmod(c.StateDir, 0o777)
		}, "state folder", Fail, "mode 0777", "chmod 0700"},
		{"token readable by others", func(t *testing.T, c *Config) {
			os.WriteFile(filepath.Join(c.StateDir, "token"), []byte("t\n"), 0o644)
		}, "token file", Fail, "mode 0644", "chmod 0600"},
		{"state path is a file", func(t *testing.T, c *Config) {
			os.Remove(c.StateDir)
			os.WriteFile(c.StateDir, nil, 0o600)
		}, "state folder", Fail, "not a folder", "--state"},
		{"state path is a link", func(t *testing.T, c *Config) {
			real := c.StateDir + ".real"
			os.Rename(c.StateDir, real)
			os.Symlink(real, c.StateDir)
		}, "state folder", Fail, "symbolic link", "not at a link"},
		{"disk nearly full", func(t *testing.T, c *Config) {
			c.Statfs = func(string) (uint64, uint64, error) { return 100 << 20, 100 << 30, nil }
		}, "free disk", Fail, "nearly full", "free space"},
		{"disk filling up", func(t *testing.T, c *Config) {
			c.Statfs = func(string) (uint64, uint64, error) { return 3 << 30, 100 << 30, nil }
		}, "free disk", Warn, "getting full", "free space"},
		{"statfs fails", func(t *testing.T, c *Config) {
			c.Statfs = func(string) (uint64, uint64, error) { return 0, 0, errors.New("input/output error") }
		}, "free disk", Fail, "input/output error", "file system"},
		{"CLI missing", func(t *testing.T, c *Config) {
			os.Remove(filepath.Join(c.EnginesDir, "node_modules", ".bin", "claude"))
			t.Setenv("PATH", t.TempDir())
		}, "engine claude", Fail, "no claude CLI", "install.sh"},
		{"CLI broken", func(t *testing.T, c *Config) {
			writeScript(t, filepath.Join(c.EnginesDir, "node_modules", ".bin", "claude"), "#!/bin/sh\necho 'node: not found' >&2\nexit 127\n")
		}, "engine claude", Fail, "node: not found", "Node.js"},
		{"CLI hangs", func(t *testing.T, c *Config) {
			writeScript(t, filepath.Join(c.EnginesDir, "node_modules", ".bin", "claude"), "#!/bin/sh\nexec sleep 60\n")
			c.CLITimeout = 200 * time.Millisecond
		}, "engine claude", Fail, "did not answer within 200ms (a first run unpacks", "reinstall"},
		{"CLI of an unsupported version", func(t *testing.T, c *Config) {
			writeScript(t, filepath.Join(c.EnginesDir, "node_modules", ".bin", "claude"), "#!/bin/sh\necho '2.0.77 (Claude Code)'\n")
		}, "engine claude", Fail, "found Claude Code 2.0.77; need Claude Code 2.1.x with x >= 328", "install a supported CLI"},
		{"codex CLI of an unsupported version", func(t *testing.T, c *Config) {
			writeScript(t, filepath.Join(c.EnginesDir, "node_modules", ".bin", "codex"), "#!/bin/sh\necho 'codex-cli 0.172.0'\n")
			c.Engines = []string{"codex"}
			os.WriteFile(c.CredentialsFile, []byte(`{"`+creds.OpenAIAPIKey+`":"sk-test"}`), 0o600)
		}, "engine codex", Fail, "found codex-cli 0.172.0; Corral needs codex-cli 0.169.x to 0.171.x", "install a supported CLI"},
		{"engine unknown", func(t *testing.T, c *Config) {
			c.Engines = []string{"gpt-cli"}
		}, "engine gpt-cli", Fail, "no engine", "claude, codex, copilot"},
		{"no cgroups", func(t *testing.T, c *Config) {
			c.Cgroups = func() error { return errors.New("no writable cgroup2 mount") }
		}, "cgroups", Warn, "no writable cgroup2 mount", "Delegate=yes"},
		{"runner missing", func(t *testing.T, c *Config) {
			c.FindRunner = func(string) (string, error) {
				return "", errors.New("runner not found next to the supervisor nor on PATH")
			}
		}, "runner", Fail, "runner not found", "make build"},
		{"credentials file loose", func(t *testing.T, c *Config) {
			os.Chmod(c.CredentialsFile, 0o644)
		}, "credentials", Fail, "mode 0644", "mode 0600"},
		{"credential missing", func(t *testing.T, c *Config) {
			os.WriteFile(c.CredentialsFile, []byte(`{"`+creds.OpenAIAPIKey+`":"k"}`), 0o600)
		}, "credentials", Fail, "no anthropic-api-key", "add them to"},
		{"no keyring service", func(t *testing.T, c *Config) {
			c.CredentialsFile = ""
		}, "credentials", Fail, "cannot be read", "--credentials FILE"},
		{"NATS unreachable", func(t *testing.T, c *Config) {
			c.NATS = []string{"nats://127.0.0.1:" + closedPort(t)}
			c.Timeout = 2 * time.Second
		}, "nats nats://127.0.0.1:", Fail, "", "reaches it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := healthy(t)
			tc.breakT(t, &cfg)
			rs := Run(context.Background(), cfg)
			var r Result
			for _, x := range rs {
				if strings.HasPrefix(x.Check, tc.check) {
					r = x
				}
			}
			if r.Check == "" {
				t.Fatalf("no %q check in %+v", tc.check, rs)
			}
			if r.Status != tc.status || !strings.Contains(r.Detail, tc.detail) || !strings.Contains(r.Fix, tc.fix) {
				t.Errorf("%s: %s %q (fix %q); want %s with %q, fix with %q", r.Check, r.Status, r.Detail, r.Fix, tc.status, tc.detail, tc.fix)
			}
			if Failed(rs) != (tc.status == Fail) {
				t.Errorf("Failed = %v with a %s", Failed(rs), tc.status)
			}
			// Every other check still passes: one fault, one finding.
			for _, x := range rs {
				if x.Check != r.Check && x.Status != OK && !strings.HasPrefix(tc.name, "state path") {
					t.Errorf("another check found something: %+v", x)
				}
			}
		})
	}
}

// closedPort is a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(testport.Addr(t))
	return port
}

func TestAMissingStateFolderIsFineWhenItCanBeCreated(t *testing.T) {
	cfg := healthy(t)
	cfg.StateDir = filepath.Join(t.TempDir(), "not", "yet")
	r := result(t, Run(context.Background(), cfg), "state folder")
	if r.Status != OK || !strings.Contains(r.Detail, "does not exist yet") {
		t.Fatalf("%+v", r)
	}
}

func TestNATSReachableIsReportedWithTheServer(t *testing.T) {
	opts := &natsserver.Options{Host: "127.0.0.1", Port: -1, ServerName: "doctor-test", JetStream: true,
		StoreDir: t.TempDir(), NoLog: true, NoSigs: true}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("NATS server did not start")
	}
	cfg := healthy(t)
	cfg.NATS = []string{"nats://user:secret@" + ns.Addr().String()}
	rs := Run(context.Background(), cfg)
	var r Result
	for _, x := range rs {
		if strings.HasPrefix(x.Check, "nats ") {
			r = x
		}
	}
	if r.Status != OK || !strings.Contains(r.Detail, "doctor-test") || !strings.Contains(r.Detail, "JetStream true") {
		t.Fatalf("%+v", r)
	}
	if strings.Contains(r.Check+r.Detail, "secret") {
		t.Fatalf("the password was printed: %+v", r)
	}
}
