package supervisor

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"go.uber.org/zap"
)

// sweepStaleRunners adopts, or else kills, the runners a previous
// supervisor of this state folder left behind. A runner left waiting for
// the next supervisor (Config.RunnerGrace) is re-attached to (adopt_linux.go),
// its session live again with its turn going on. One that does not answer
// would write the same event log as the runner this supervisor is about to
// start: it is killed, with its process group. A pid is only adopted or
// killed when /proc shows it is a supervisor-driven runner (--stdio) of
// that very folder, so a recycled pid or a runner someone started by hand
// is left alone.
func (m *Manager) sweepStaleRunners() {
	des, err := os.ReadDir(m.sessions)
	if err != nil {
		m.log.Warn("sweep of stale runners skipped", zap.Error(err))
		return
	}
	var wg sync.WaitGroup
	for _, de := range des {
		if !de.IsDir() || (m.cfg.OwnsSession != nil && !m.cfg.OwnsSession(de.Name())) {
			continue
		}
		dir := filepath.Join(m.sessions, de.Name())
		pidPath := filepath.Join(dir, pidFile)
		raw, err := os.ReadFile(pidPath)
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil || pid <= 1 {
			m.log.Warn("ignoring unreadable runner.pid", zap.String("file", pidPath))
			continue
		}
		args, err := cmdline(pid)
		if errors.Is(err, os.ErrNotExist) {
			os.Remove(pidPath) // the runner is gone
			continue
		}
		if err != nil || !m.isOwnRunner(pid, args, dir) {
			continue
		}
		id := de.Name()
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := errors.New("its session id is not valid")
			if validID(id) {
				err = m.adopt(id, pid)
			}
			if err == nil {
				return
			}
			m.log.Warn("killing a runner left by a previous supervisor", zap.String("session", id), zap.Int("pid", pid), zap.NamedError("notReattached", err))
			leaf := m.leafOf(pid)
			defer sweepLeaf(m.log, leaf)
			if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			} else {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			os.Remove(pidPath)
		}()
	}
	wg.Wait()
}

func cmdline(pid int) ([]string, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, err
	}
	raw = bytes.TrimSuffix(raw, []byte{0})
	if len(raw) == 0 {
		return nil, os.ErrNotExist // a zombie
	}
	return strings.Split(string(raw), "\x00"), nil
}

// isOwnRunner reports whether process pid, running args, is a runner this
// supervisor started for session folder dir: one of its runner programs
// with --stdio, and either --session-dir dir or, for a runner started as a
// spare, dir as its working directory.
func (m *Manager) isOwnRunner(pid int, args []string, dir string) bool {
	if len(args) == 0 {
		return false
	}
	switch filepath.Base(args[0]) {
	case "runner", "plugin-runner", filepath.Base(m.cfg.RunnerPath), filepath.Base(m.cfg.PluginRunnerPath):
	default:
		return false
	}
	stdio, named, sameDir := false, false, false
	for i, a := range args[1:] {
		switch {
		case a == "--stdio" || a == "-stdio":
			stdio = true
		case (a == "--session-dir" || a == "-session-dir") && i+2 < len(args):
			named = true
			sameDir = filepath.Clean(args[i+2]) == filepath.Clean(dir)
		case strings.HasPrefix(a, "--session-dir="):
			named = true
			sameDir = filepath.Clean(strings.TrimPrefix(a, "--session-dir=")) == filepath.Clean(dir)
		}
	}
	if stdio && !named {
		cwd, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "cwd"))
		sameDir = err == nil && filepath.Clean(cwd) == filepath.Clean(dir)
	}
	return stdio && sameDir
}
