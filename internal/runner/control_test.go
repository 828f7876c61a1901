package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/unixsock"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

func serveTestControl(t *testing.T, do CommandHandler) string {
	t.Helper()
	dir := t.TempDir()
	ln, err := ListenControl(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeControl(ctx, ln, do, zap.NewNop()) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeControl: %v", err)
		}
	})
	return filepath.Join(dir, ControlSock)
}

func TestControlSocketAnswersInOrderAndSurvivesBadInput(t *testing.T) {
	do := func(_ context.Context, req command.Request) *wire.Reply {
		send, ok := req.(command.Send)
		if !ok {
			return wire.ErrReply(wire.Errorf(wire.CodeBadRequest, "unknown command %q", req.Cmd()))
		}
		return wire.OKReply(map[string]string{"echo": send.Text})
	}
	path := serveTestControl(t, do)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("control.sock mode %v, want 0600", fi.Mode().Perm())
	}
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	input := strings.Join([]string{
		`{"cmd":"send","text":"1"}`,
		`not json at all`,
		`{"cmd":"frobnicate"}`,
		`{"cmd":"send","text":"2"}`,
		`{"cmd":"send","text":"` + strings.Repeat("x", maxCommandLine+10) + `"}`,
		`{"cmd":"send","text":"3"}`,
	}, "\n") + "\n"
	go c.Write([]byte(input))
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 1<<16), 1<<16)
	want := []struct {
		ok   bool
		echo string
		code wire.Code
		msg  string
	}{
		{ok: true, echo: "1"},
		{code: wire.CodeBadRequest, msg: "malformed"},
		{code: wire.CodeBadRequest, msg: "unknown command"},
		{ok: true, echo: "2"},
		{code: wire.CodeBadRequest, msg: "too long"},
		{ok: true, echo: "3"},
	}
	for i, w := range want {
		if !sc.Scan() {
			t.Fatalf("reply %d missing: %v", i, sc.Err())
		}
		var r wire.Reply
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if r.OK != w.ok {
			t.Fatalf("reply %d: %s", i, sc.Bytes())
		}
		if w.ok && !strings.Contains(string(r.Result), `"echo":"`+w.echo+`"`) {
			t.Fatalf("reply %d out of order: %s", i, sc.Bytes())
		}
		if !w.ok && (r.Error.Code != w.code || !strings.Contains(r.Error.Message, w.msg)) {
			t.Fatalf("reply %d: %s, want %s containing %q", i, sc.Bytes(), w.code, w.msg)
		}
	}
}

func TestControlSocketRefusesASecondRunner(t *testing.T) {
	path := serveTestControl(t, func(context.Context, command.Request) *wire.Reply { return wire.OKReply(nil) })
	if _, err := ListenControl(filepath.Dir(path)); err == nil {
		t.Fatal("a second runner took over a live session's control socket")
	}
}

func TestControlSocketReplacesAStaleOne(t *testing.T) {
	dir := t.TempDir()
	ln, err := ListenControl(dir)
	if err != nil {
		t.Fatal(err)
	}
	// A dead runner leaves its socket file behind: its listener closes
	// without removing it.
	ln.(*unixsock.Listener).UnixListener.Close()
	ln2, err := ListenControl(dir)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
}
