// Package testbin builds Go commands for tests that run them as processes
// (the supervisor, the runner, a pinned tool), once per test process, into
// a temporary folder named by the process.
package testbin

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

// folderPrefix names the folders Build builds into, followed by the
// building process's id: a test process has no hook that runs when it
// exits, so each build sweeps the folders of processes that have ended
// (tens of MB each; hundreds of test runs filled a disk).
const folderPrefix = "corral-testbin-pid"

// Once builds a set of packages the first time Build is called; later calls
// return the same folder, or the same error.
type Once struct {
	once sync.Once
	dir  string
	err  error
}

// Build builds pkgs statically (CGO_ENABLED=0), as the Makefile does, into
// a folder of their own, and returns it: each command is there under its
// name. Without the go command the test skips with the reason, or fails in
// CI (testenv.NeedGo).
func (o *Once) Build(tb testing.TB, pkgs ...string) string {
	tb.Helper()
	gobin := testenv.NeedGo(tb)
	o.once.Do(func() {
		sweep(os.TempDir())
		if o.dir, o.err = os.MkdirTemp("", fmt.Sprintf("%s%d-", folderPrefix, os.Getpid())); o.err != nil {
			return
		}
		cmd := exec.Command(gobin, append([]string{"build", "-o", o.dir + string(os.PathSeparator)}, pkgs...)...)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			o.err = fmt.Errorf("go build %s: %v\n%s", strings.Join(pkgs, " "), err, out.String())
		}
	})
	if o.err != nil {
		tb.Fatal(o.err)
	}
	return o.dir
}

// Remove deletes what Build built; a TestMain calls it after the tests ran.
func (o *Once) Remove() {
	if o.dir != "" {
		os.RemoveAll(o.dir)
	}
}

// sweep removes the folders in tmp that this user's test processes built
// and that are gone.
func sweep(tmp string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), folderPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if st, ok := info.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Getuid() {
			continue // another user's: not ours to judge
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			os.RemoveAll(filepath.Join(tmp, e.Name()))
		}
	}
}
