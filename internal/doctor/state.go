package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Free disk thresholds: below the failure mark a session's log or an
// agent's edit may not fit; below the warning mark it will not be long.
const (
	failFreeBytes = 512 << 20
	failFreeShare = 0.01
	warnFreeBytes = 2 << 30
	warnFreeShare = 0.05
)

// checkState checks that the state folder, and the token file in it, are
// the supervisor's user's own and closed to everyone else: anyone who can
// write there can plant a session spec, and anyone who can read there can
// read every session's events and the API token.
func checkState(_ context.Context, cfg Config) []Result {
	const check = "state folder"
	dir := cfg.StateDir
	me := cfg.WhoAmI()
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		parent := nearestDir(dir)
		if err := writable(parent); err != nil {
			return []Result{failed(check, fmt.Sprintf("create it for the supervisor's user: install -d -m 0700 -o USER %s", dir),
				"%s does not exist, and %s cannot create it: %v", dir, parent, err)}
		}
		return []Result{ok(check, "%s does not exist yet; serve creates it with mode 0700", dir)}
	case err != nil:
		return []Result{failed(check, "check the path given to --state", "%s: %v", dir, err)}
	case fi.Mode()&os.ModeSymlink != 0:
		return []Result{failed(check, "point --state at the folder itself, not at a link", "%s is a symbolic link", dir)}
	case !fi.IsDir():
		return []Result{failed(check, "point --state at a folder", "%s is not a folder", dir)}
	}
	var out []Result
	if r, bad := ownedPrivately(check, dir, fi, me, 0o700); bad {
		out = append(out, r)
	} else {
		out = append(out, ok(check, "%s: owner uid %d, mode %#o", dir, me, fi.Mode().Perm()))
	}
	token := filepath.Join(dir, "token")
	if tfi, err := os.Lstat(token); err == nil {
		if r, bad := ownedPrivately("token file", token, tfi, me, 0o600); bad {
			out = append(out, r)
		} else {
			out = append(out, ok("token file", "%s: owner uid %d, mode %#o", token, me, tfi.Mode().Perm()))
		}
	}
	return out
}

// ownedPrivately fails a file that is not me's or that others may use.
func ownedPrivately(check, path string, fi os.FileInfo, me int, want os.FileMode) (Result, bool) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != me {
		return failed(check, fmt.Sprintf("run the supervisor as the owner, or give it to the supervisor's user: chown -R %d %s", me, path),
			"%s belongs to uid %d, not to the supervisor's user (uid %d)", path, st.Uid, me), true
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return failed(check, fmt.Sprintf("chmod %#o %s", want, path),
			"%s has mode %#o: other users may read or change it", path, perm), true
	}
	return Result{}, false
}

// checkDisk checks the free space where the state folder is (or will be).
func checkDisk(_ context.Context, cfg Config) []Result {
	const check = "free disk"
	dir := nearestDir(cfg.StateDir)
	free, total, err := cfg.Statfs(dir)
	if err != nil {
		return []Result{failed(check, "check the file system holding the state folder", "statfs %s: %v", dir, err)}
	}
	share := 0.0
	if total > 0 {
		share = float64(free) / float64(total)
	}
	detail := fmt.Sprintf("%s: %s free of %s (%.1f%%)", dir, sizeText(free), sizeText(total), 100*share)
	fix := fmt.Sprintf("free space on the file system holding %s, or move --state to a larger one", dir)
	switch {
	case free < failFreeBytes || share < failFreeShare:
		return []Result{failed(check, fix, "%s: nearly full", detail)}
	case free < warnFreeBytes || share < warnFreeShare:
		return []Result{warned(check, fix, "%s: getting full", detail)}
	}
	return []Result{ok(check, "%s", detail)}
}

func statfs(path string) (free, total uint64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// nearestDir is dir, or its nearest ancestor that exists.
func nearestDir(dir string) string {
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return dir
		}
		dir = parent
	}
}

// writable reports whether this process may create entries in dir.
func writable(dir string) error {
	return syscall.Access(dir, 0x2 /* W_OK */)
}

func sizeText(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
