package daemon

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"

	"github.com/corral-dev/corral/internal/ownedfile"
	"go.uber.org/zap/zaptest"
)

// otherUserName is the second local user the tests act as.
const otherUserName = "corral-test-other"

// otherUser returns a second local user, creating it (useradd) when the
// test runs as root and it does not exist. Without root the test skips, or
// fails under CI=true (CI runs as root).
func otherUser(t *testing.T) (uid, gid uint32) {
	t.Helper()
	testenv.NeedRoot(t, "acting as a second local user")
	u, err := user.Lookup(otherUserName)
	if err != nil {
		useradd, lerr := exec.LookPath("useradd")
		if lerr != nil {
			t.Fatalf("no user %s and no useradd to create it", otherUserName)
		}
		if out, err := exec.Command(useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", otherUserName).CombinedOutput(); err != nil {
			t.Fatalf("useradd: %v %s", err, out)
		}
		if u, err = user.Lookup(otherUserName); err != nil {
			t.Fatal(err)
		}
	}
	a, _ := strconv.Atoi(u.Uid)
	b, _ := strconv.Atoi(u.Gid)
	return uint32(a), uint32(b)
}

// asUser runs a shell script as uid:gid.
func asUser(t *testing.T, uid, gid uint32, script string) {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: gid}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as uid %d: %v %s", uid, err, out)
	}
}

// refusedRun returns a function that runs a daemon on cfg, expecting it to
// refuse to start: one that starts anyway stops at once, and its nil error
// fails the caller's check.
func refusedRun(t *testing.T) func(Config) error {
	return func(cfg Config) error {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cfg.RunnerPath = os.Args[0]
		cfg.Logger = zaptest.NewLogger(t)
		cfg.Ready = func(Listening) { cancel() }
		return Run(ctx, cfg)
	}
}

// TestStateFolderPlantedByAnotherUser is finding 1 of issue 18, as
// reproduced: another local user creates the state folder first in a
// shared folder (mode 1777, like /tmp), open to all, with a token link to
// supervisor.lock (which made the token the supervisor's pid) or a token
// file of their own. A supervisor running as root must refuse to use it,
// and refuse that user's token and credentials files too.
func TestStateFolderPlantedByAnotherUser(t *testing.T) {
	uid, gid := otherUser(t)
	top := t.TempDir()
	// The other user must reach the shared folder.
	for _, d := range []string{top, filepath.Dir(top)} {
		os.Chmod(d, 0o711)
	}
	shared := filepath.Join(top, "tmp")
	if err := os.Mkdir(shared, 0o1777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(shared, 0o1777)
	state := filepath.Join(shared, "corral")
	asUser(t, uid, gid, "mkdir -m 0777 "+state+" && ln -s supervisor.lock "+state+"/token && "+
		"printf planted > "+shared+"/their-token && chmod 600 "+shared+"/their-token && "+
		"printf '{\"anthropic-api-key\":\"theirs\"}' > "+shared+"/their-creds && chmod 600 "+shared+"/their-creds")
	// The precondition the attack needs: the folder is theirs.
	fi, err := os.Stat(state)
	if err != nil || fi.Sys().(*syscall.Stat_t).Uid != uid {
		t.Fatalf("precondition: the state folder is not the other user's: %v %v", fi, err)
	}

	run := refusedRun(t)
	err = run(Config{StateDir: state, Listen: "127.0.0.1:0"})
	if !errors.Is(err, ownedfile.ErrUnsafe) || !strings.Contains(err.Error(), "owned by uid "+strconv.Itoa(int(uid))) {
		t.Fatalf("their state folder: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(state, "supervisor.lock")); !os.IsNotExist(err) {
		t.Fatalf("the supervisor wrote in their folder: %v", err)
	}

	// A state folder of our own, but their token or credentials file.
	mine := filepath.Join(t.TempDir(), "state")
	err = run(Config{StateDir: mine, Listen: "127.0.0.1:0", TokenFile: filepath.Join(shared, "their-token")})
	if !errors.Is(err, ownedfile.ErrUnsafe) {
		t.Fatalf("their token file: %v", err)
	}
	err = run(Config{StateDir: mine, CredentialsFile: filepath.Join(shared, "their-creds")})
	if !errors.Is(err, ownedfile.ErrUnsafe) {
		t.Fatalf("their credentials file: %v", err)
	}
}

// TestStateFilesAreNotFollowed covers the parts of finding 1 no second user
// is needed for: a state folder others may write, and links where the
// token, the lock and the socket are.
func TestStateFilesAreNotFollowed(t *testing.T) {
	base := t.TempDir()
	run := refusedRun(t)

	open := filepath.Join(base, "open")
	os.Mkdir(open, 0o777)
	os.Chmod(open, 0o777)
	if err := run(Config{StateDir: open}); !errors.Is(err, ownedfile.ErrUnsafe) || !strings.Contains(err.Error(), "0777") {
		t.Fatalf("a state folder others may write: %v", err)
	}

	for _, name := range []string{TokenName, lockName} {
		state := filepath.Join(base, "link-"+name)
		os.Mkdir(state, 0o700)
		elsewhere := filepath.Join(base, "elsewhere-"+name)
		os.WriteFile(elsewhere, []byte("0123456789abcdef\n"), 0o600)
		os.Symlink(elsewhere, filepath.Join(state, name))
		err := run(Config{StateDir: state, Listen: "127.0.0.1:0"})
		if !errors.Is(err, ownedfile.ErrUnsafe) || !strings.Contains(err.Error(), "symbolic link") {
			t.Fatalf("%s as a link: %v", name, err)
		}
		if raw, _ := os.ReadFile(elsewhere); string(raw) != "0123456789abcdef\n" {
			t.Fatalf("the link's target was changed: %q", raw)
		}
	}
	// A token file given as a link.
	state := filepath.Join(base, "state")
	real := filepath.Join(base, "real-token")
	os.WriteFile(real, []byte("tok\n"), 0o600)
	os.Symlink(real, filepath.Join(base, "token-link"))
	if err := run(Config{StateDir: state, Listen: "127.0.0.1:0", TokenFile: filepath.Join(base, "token-link")}); !errors.Is(err, ownedfile.ErrUnsafe) {
		t.Fatalf("--token-file as a link: %v", err)
	}
	// Credentials through a link.
	credsFile := filepath.Join(base, "creds.json")
	os.WriteFile(credsFile, []byte(`{}`), 0o600)
	os.Symlink(credsFile, filepath.Join(base, "creds-link"))
	if err := run(Config{StateDir: state, CredentialsFile: filepath.Join(base, "creds-link")}); !errors.Is(err, ownedfile.ErrUnsafe) {
		t.Fatalf("--credentials as a link: %v", err)
	}
	// Something else where the socket goes.
	sockState := filepath.Join(base, "sock")
	os.Mkdir(sockState, 0o700)
	os.Symlink("/dev/null", filepath.Join(sockState, SocketName))
	if err := run(Config{StateDir: sockState}); !errors.Is(err, ownedfile.ErrUnsafe) {
		t.Fatalf("a link where the socket goes: %v", err)
	}
}
