package proc

import (
	"context"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCleanEnv(t *testing.T) {
	in := []string{
		"HOME=/home/u", "ANTHROPIC_API_KEY=sk", "CLAUDE_CONFIG_DIR=/x", "OPENAI_API_KEY=o", "OPENAI_BASE_URL=u",
		"GITHUB_TOKEN=g", "GH_TOKEN=g", "AWS_SECRET_ACCESS_KEY=a", "MY_SERVICE_API_KEY=k", "SOME_AUTH_TOKEN=t",
		"BASH_ENV=/evil", "ENV=/evil", "CDPATH=/tmp", "PATH=/usr/bin:.:bin::/bin", "LANG=C.UTF-8", "TERM=xterm",
	}
	want := []string{"HOME=/home/u", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", "TERM=xterm"}
	if got := CleanEnv(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("CleanEnv = %q, want %q", got, want)
	}
}

// TestCleanEnvDropsSecretsAndSteering is finding 2 of issue 18: beyond the
// provider credentials, engine children lose every variable whose name
// looks like a secret's and every variable that steers a program, unless
// the user's allowlist (CORRAL_ENV_ALLOW) names it; provider credentials
// stay out even then.
func TestCleanEnvDropsSecretsAndSteering(t *testing.T) {
	in := []string{
		"HOME=/home/u", "DEPLOY_KEY=d", "DB_PASSWORD=p", "stripe_secret=s", "SESSION_TOKEN=t", "GOOGLE_APPLICATION_CREDENTIALS=/c",
		"NODE_OPTIONS=--require /tmp/x.js", "LD_PRELOAD=/tmp/x.so", "PYTHONSTARTUP=/tmp/x.py", "BASH_FUNC_ls%%=() { evil; }",
		"MONKEY=banana", "KEYBOARD=us", "LANG=C",
	}
	want := []string{"HOME=/home/u", "MONKEY=banana", "KEYBOARD=us", "LANG=C"}
	if got := CleanEnv(in); !reflect.DeepEqual(got, want) {
		t.Fatalf("CleanEnv = %q, want %q", got, want)
	}
	allowed := append(in, AllowEnvVar+"=DEPLOY_KEY, NODE_OPTIONS,ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY=sk")
	want = []string{"HOME=/home/u", "DEPLOY_KEY=d", "NODE_OPTIONS=--require /tmp/x.js", "MONKEY=banana", "KEYBOARD=us", "LANG=C",
		AllowEnvVar + "=DEPLOY_KEY, NODE_OPTIONS,ANTHROPIC_API_KEY"}
	if got := CleanEnv(allowed); !reflect.DeepEqual(got, want) {
		t.Fatalf("CleanEnv with an allowlist = %q, want %q", got, want)
	}
}

func TestIsSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"ANTHROPIC_API_KEY": true, "GITHUB_TOKEN": true, "DB_PASSWORD": true, "MYSQL_PASSWD": true,
		"client_secret": true, "SecretValue": true, "GOOGLE_APPLICATION_CREDENTIALS": true, "KEY": true, "TOKEN": true,
		"HOME": false, "PATH": false, "MONKEY": false, "KEYBOARD": false, "TOKENIZER_PATH": false, "CREDENTIALS_DIR": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestTailKeepsTheLastLines(t *testing.T) {
	tl := NewTail(3)
	tl.Write([]byte("one\ntwo\nthr"))
	tl.Write([]byte("ee\nfour\nfive"))
	if got := tl.Lines(); !reflect.DeepEqual(got, []string{"three", "four", "five"}) {
		t.Fatalf("Lines = %q, want the last three", got)
	}
}

func TestStopGroupKillsTheWholeGroup(t *testing.T) {
	// The shell ignores SIGTERM and its child sleeps: both must die.
	cmd := exec.Command("/bin/sh", "-c", "trap '' TERM; sleep 60 & echo $!; wait")
	Configure(cmd)
	child := startWithChild(t, cmd)
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if killed := StopGroup(cmd, done, 200*time.Millisecond); !killed {
		t.Fatal("a shell ignoring SIGTERM was not reported killed")
	}
	waitGone(t, child)
}

// startWithChild starts cmd, a shell that starts a child and prints its
// process id, and returns that id.
func startWithChild(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := out.Read(buf)
	return strings.TrimSpace(string(buf[:n]))
}

// waitGone fails the test if child outlives its group's SIGKILL, which the
// kernel delivers asynchronously: it gets a moment.
func waitGone(t *testing.T, child string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for alive(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if alive(child) {
		st, _ := os.ReadFile("/proc/" + child + "/stat")
		t.Fatalf("the group's child %s survived: %s", child, st)
	}
}

// alive reports whether pid runs: it exists and is not a zombie waiting for
// its new parent to reap it.
func alive(pid string) bool {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

func TestConfigureContextKillsTheWholeGroupWhenTheContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// exec's own cancel kills the shell alone; its child must die too.
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", "sleep 60 & echo $!; wait")
	ConfigureContext(cmd, time.Minute)
	child := startWithChild(t, cmd)
	cancel()
	if err := cmd.Wait(); err == nil {
		t.Fatal("a command whose context ended reported success")
	}
	waitGone(t, child)
}
