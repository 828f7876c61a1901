package cli

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
)

// maxConfigFile bounds a settings file.
const maxConfigFile = 64 << 10

// applyConfigFile sets fs's flags from a settings file: one flag a line,
// NAME = VALUE (NAME as on the command line, without dashes; VALUE the rest
// of the line, trimmed, quotes and all), blank lines and lines starting
// with # ignored. A repeatable flag may appear on several lines.
//
// The file says which runner to start, so one that another user could
// change is refused: it must belong to the supervisor's user or root and
// be writable by its owner alone.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("--config %s is not a regular file", path)
	}
	if err := checkConfigOwner(path, fi); err != nil {
		return err
	}
	raw, err := io.ReadAll(io.LimitReader(f, maxConfigFile+1))
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	if len(raw) > maxConfigFile {
		return fmt.Errorf("--config %s is larger than %d bytes", path, maxConfigFile)
	}
	return applyConfig(fs, path, raw)
}

func checkConfigOwner(path string, fi os.FileInfo) error {
	if fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("--config %s has mode %#o: others may change it; chmod go-w %s", path, fi.Mode().Perm(), path)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := os.Getuid(); st.Uid != 0 && int(st.Uid) != uid {
		return fmt.Errorf("--config %s belongs to user %d, neither this user (%d) nor root", path, st.Uid, uid)
	}
	return nil
}

// applyConfig sets fs's flags from the settings in raw.
func applyConfig(fs *flag.FlagSet, path string, raw []byte) error {
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 4096), maxConfigFile)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" {
			return fmt.Errorf("%s:%d: want NAME = VALUE, not %q", path, n, clipText(line, 60))
		}
		name = strings.TrimLeft(name, "-")
		if name == "config" || fs.Lookup(name) == nil {
			return fmt.Errorf("%s:%d: no setting %q (the settings are serve's flags; see supervisor serve --help)", path, n, clipText(name, 60))
		}
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("%s:%d: %s: %v", path, n, name, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s: a line is too long", path)
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
