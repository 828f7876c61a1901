package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/pkg/api"
	"go.uber.org/zap/zapcore"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDoctorExitsOneOnAFailureAndSaysWhatToDo(t *testing.T) {
	state := t.TempDir()
	runner := filepath.Join(t.TempDir(), "runner")
	os.WriteFile(runner, []byte("#!/bin/sh\n"), 0o755)
	os.Chmod(state, 0o700)
	code, out, errs := runCLI(t, "doctor", "--state", state, "--runner", runner, "--engines", "", "--json")
	var report struct {
		OK     bool `json:"ok"`
		Checks []struct{ Check, Status, Detail, Fix string }
	}
	if err := jsonResult(out, &report); err != nil || code != 0 || !report.OK {
		t.Fatalf("healthy: exit %d, %v, report %s %s", code, err, out, errs)
	}
	os.Chmod(state, 0o777)
	code, out, _ = runCLI(t, "doctor", "--state", state, "--runner", runner, "--engines", "")
	if code != 1 || !strings.Contains(out, "FAIL  state folder") || !strings.Contains(out, "fix: chmod 0700 "+state) {
		t.Fatalf("a 0777 state folder: exit %d\n%s", code, out)
	}
}

func TestDoctorReadsServesSettingsFile(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	os.Mkdir(state, 0o700)
	conf := filepath.Join(dir, "supervisor.conf")
	os.WriteFile(conf, []byte("state = "+state+"\nrunner = "+filepath.Join(dir, "no-runner")+"\n"), 0o600)
	code, out, _ := runCLI(t, "doctor", "--config", conf, "--engines", "")
	if code != 1 || !strings.Contains(out, state) || !strings.Contains(out, "FAIL  runner") {
		t.Fatalf("doctor --config: exit %d\n%s", code, out)
	}
}

func TestHealthPrintsBuildAndReadiness(t *testing.T) {
	startDaemon(t)
	code, out, errs := runCLI(t, "health")
	var h api.HealthReply
	if err := json.Unmarshal([]byte(out), &h); err != nil || code != 0 || !h.Ready || h.Version == "" {
		t.Fatalf("health: exit %d %v %q %s", code, err, out, errs)
	}
	t.Setenv("CORRAL_STATE", t.TempDir())
	if code, _, errs := runCLI(t, "health"); code != 1 {
		t.Fatalf("health with no supervisor: exit %d %s", code, errs)
	}
}

func writeConf(t *testing.T, body string, mode os.FileMode) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "supervisor.conf")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(path, mode)
	return path
}

func TestServeSettingsFileIsServesFlagsAndTheCommandLineWins(t *testing.T) {
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	conf := writeConf(t, `
# a comment
max-live = 7
log-level = debug
--idle-ttl= 90s
spare-runner = false
metrics-listen = 127.0.0.1:9464
`, 0o600)
	o, err := parseServe(e, []string{"--config", conf, "--max-live", "3"})
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.MaxLive != 3 || o.level != "debug" || o.cfg.IdleTTL != 90*time.Second || o.cfg.SpareRunner || o.cfg.MetricsListen != "127.0.0.1:9464" {
		t.Fatalf("settings %+v level %q", o.cfg, o.level)
	}
	for _, tc := range []struct{ body, want string }{
		{"max-live = many\n", ":1: max-live"},
		{"nonsense\n", "want NAME = VALUE"},
		{"colour = blue\n", `no setting "colour"`},
		{"config = /etc/other\n", `no setting "config"`},
		{"max-live = 0\n", "--max-live must be positive"},
		{"log-level = loud\n", "--log-level"},
		{strings.Repeat("#", 70<<10), "larger than"},
	} {
		_, err := parseServe(e, []string{"--config", writeConf(t, tc.body, 0o600)})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.30q: %v, want %q", tc.body, err, tc.want)
		}
	}
	if _, err := parseServe(e, []string{"--config", writeConf(t, "max-live = 2\n", 0o666)}); err == nil || !strings.Contains(err.Error(), "others may change it") {
		t.Errorf("a world-writable settings file: %v", err)
	}
}

func TestReloadReturnsTheFilesReloadableSettings(t *testing.T) {
	e := &env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	conf := writeConf(t, "max-live = 7\nlog-level = info\n", 0o600)
	args := []string{"--config", conf, "--idle-ttl", "1m"}
	running, err := parseServe(e, args)
	if err != nil {
		t.Fatal(err)
	}
	log, _, _ := newLogger("info", "json")
	os.WriteFile(conf, []byte("max-live = 2\nlog-level = warn\nidle-ttl = 5m\n"), 0o600)
	s, err := reloadServe(e, args, running, log)
	if err != nil {
		t.Fatal(err)
	}
	if s.MaxLive != 2 || s.LogLevel != zapcore.WarnLevel {
		t.Fatalf("reloaded %+v", s)
	}
	os.WriteFile(conf, []byte("max-live = -1\n"), 0o600)
	if _, err := reloadServe(e, args, running, log); err == nil {
		t.Fatal("a bad file reloaded")
	}
}

func TestLoggerFormats(t *testing.T) {
	for _, f := range []string{"console", "json"} {
		if _, _, err := newLogger("warn", f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	if _, _, err := newLogger("info", "xml"); err == nil {
		t.Error("--log-format xml accepted")
	}
}

// FuzzSettingsFile: any file either applies or is refused with an error
// naming the file; nothing panics.
func FuzzSettingsFile(f *testing.F) {
	f.Add([]byte("max-live = 3\nlog-level = debug\n"))
	f.Add([]byte("# only a comment\n\n"))
	f.Add([]byte("=\n"))
	f.Add([]byte("spare-runner\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		o := &serveOptions{}
		fs := serveFlags(&env{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}, o)
		fs.Init("serve", flag.ContinueOnError)
		if err := applyConfig(fs, "f.conf", raw); err != nil && !strings.HasPrefix(err.Error(), "f.conf") {
			t.Fatalf("error %q does not name the file", err)
		}
	})
}
