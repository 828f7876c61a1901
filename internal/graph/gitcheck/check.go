package gitcheck

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrNotGit is returned for a folder that is not inside a git worktree:
// claims there cannot be checked.
var ErrNotGit = errors.New("not inside a git worktree")

// maxHashed bounds how much of a file is hashed to tell whether it changed;
// past it, size and modification time stand in.
const maxHashed = 64 << 20

// git runs git in dir with settings that keep it from running anything
// the repository configures (fsmonitor, hooks: the repository is not
// trusted) and from taking locks a concurrent agent's git would trip on.
func git(ctx context.Context, dir string, args ...string) ([]byte, error) {
	full := append([]string{"-C", dir, "-c", "core.fsmonitor=false", "-c", "core.hooksPath=/dev/null", "-c", "core.quotepath=false"}, args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(os.Environ(), "LC_ALL=C", "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Root returns the top of the git worktree holding dir, or ErrNotGit.
func Root(ctx context.Context, dir string) (string, error) {
	out, err := git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", ErrNotGit
	}
	return strings.TrimSpace(string(out)), nil
}

// Baseline is a worktree's state when a node started: HEAD and, for every
// path git reports as changed against HEAD, a fingerprint of its content.
type Baseline struct {
	Root  string            `json:"root"`
	Head  string            `json:"head,omitempty"`
	Taken time.Time         `json:"taken"`
	Files map[string]string `json:"files"`
}

// Snapshot takes a worktree's baseline.
func Snapshot(ctx context.Context, dir string) (*Baseline, error) {
	root, err := Root(ctx, dir)
	if err != nil {
		return nil, err
	}
	b := &Baseline{Root: root, Taken: fsNow(ctx, root), Files: map[string]string{}}
	if out, err := git(ctx, root, "rev-parse", "--verify", "-q", "HEAD"); err == nil {
		b.Head = strings.TrimSpace(string(out))
	}
	out, err := git(ctx, root, "status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored=no")
	if err != nil {
		return nil, err
	}
	entries, err := ParseStatus(out)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		for _, p := range []string{e.Path, e.Orig} {
			if p != "" {
				b.Files[p] = e.XY + " " + fingerprint(filepath.Join(root, p))
			}
		}
	}
	return b, nil
}

// fingerprint names a path's content: absent, a directory, a symlink's
// target, or a file's digest (size and time past maxHashed).
func fingerprint(p string) string {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return "absent"
	case fi.Mode()&os.ModeSymlink != 0:
		t, _ := os.Readlink(p)
		return "link:" + t
	case fi.IsDir():
		return "dir"
	case fi.Size() > maxHashed:
		return fmt.Sprintf("big:%d:%d", fi.Size(), fi.ModTime().UnixNano())
	}
	f, err := os.Open(p)
	if err != nil {
		return "unreadable"
	}
	defer f.Close()
	h := sha256.New()
	io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Changed lists the paths that changed since base: every path whose
// status or content differs, both sides of renames, and what commits made
// since base's HEAD changed.
func Changed(ctx context.Context, base *Baseline) (map[string]bool, error) {
	now, err := Snapshot(ctx, base.Root)
	if err != nil {
		return nil, err
	}
	changed := map[string]bool{}
	for p, fp := range now.Files {
		if base.Files[p] != fp {
			changed[p] = true
		}
	}
	for p, fp := range base.Files {
		if now.Files[p] != fp {
			changed[p] = true
		}
	}
	if base.Head != "" && now.Head != "" && now.Head != base.Head {
		out, err := git(ctx, base.Root, "diff", "--name-status", "-z", "-M", base.Head, now.Head)
		if err != nil {
			return nil, err
		}
		for _, p := range diffPaths(out) {
			changed[p] = true
		}
	}
	return changed, nil
}

// diffPaths reads the paths of `git diff --name-status -z`: a status
// field, then one path, or two for renames and copies.
func diffPaths(out []byte) []string {
	recs := strings.Split(string(out), "\x00")
	var paths []string
	for i := 0; i < len(recs); i++ {
		st := recs[i]
		if st == "" {
			continue
		}
		n := 1
		if st[0] == 'R' || st[0] == 'C' {
			n = 2
		}
		for j := 0; j < n && i+1 < len(recs); j++ {
			i++
			paths = append(paths, recs[i])
		}
	}
	return paths
}

// Verdict is what git says about a node's claims.
type Verdict struct {
	Confirmed []string
	// False are claims git does not bear out, each with why.
	False []string
	// Unclaimed are paths that changed but no claim named (not an error:
	// other nodes may share the worktree).
	Unclaimed []string
}

// Verify checks claims (paths relative to the worktree, or directories
// ending in /) against what changed since base. A claim holds when git
// shows the path (or, for a directory, a path under it) changed, or, for a
// path git ignores, when the file was modified after base was taken.
func Verify(ctx context.Context, dir string, base *Baseline, claims []string) (*Verdict, error) {
	changed, err := Changed(ctx, base)
	if err != nil {
		return nil, err
	}
	// Claims are relative to the node's folder, which may sit below the
	// worktree's root.
	prefix := ""
	if rel, err := filepath.Rel(base.Root, dir); err == nil && rel != "." && !strings.HasPrefix(rel, "..") {
		prefix = filepath.ToSlash(rel) + "/"
	}
	v := &Verdict{}
	used := map[string]bool{}
	for _, claim := range claims {
		p, ok := clean(prefix, claim)
		if !ok {
			v.False = append(v.False, fmt.Sprintf("%s: outside the worktree", claim))
			continue
		}
		hit := changed[p]
		if !hit {
			for c := range changed {
				if strings.HasPrefix(c, p+"/") {
					hit = true
					used[c] = true
				}
			}
		}
		if !hit && ignoredAndTouched(ctx, base, p) {
			hit = true
		}
		if hit {
			used[p] = true
			v.Confirmed = append(v.Confirmed, claim)
		} else {
			v.False = append(v.False, fmt.Sprintf("%s: git shows no change", claim))
		}
	}
	for c := range changed {
		if !used[c] {
			v.Unclaimed = append(v.Unclaimed, c)
		}
	}
	sort.Strings(v.Unclaimed)
	return v, nil
}

// clean makes a claim a slash path relative to the worktree's root.
func clean(prefix, claim string) (string, bool) {
	c := filepath.ToSlash(claim)
	if path.IsAbs(c) {
		return "", false
	}
	c = path.Clean(prefix + strings.TrimSuffix(c, "/"))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// ignoredAndTouched reports whether git ignores p and the file was
// modified after the baseline: git keeps no record of ignored files, so
// their modification time is the evidence.
func ignoredAndTouched(ctx context.Context, base *Baseline, p string) bool {
	if _, err := git(ctx, base.Root, "check-ignore", "-q", "--", p); err != nil {
		return false
	}
	fi, err := os.Lstat(filepath.Join(base.Root, p))
	return err == nil && !fi.ModTime().Before(base.Taken)
}

// fsNow is the time by the worktree's filesystem: the modification time of
// a file made in its git folder now. File times compared with it then
// share its clock and its granularity.
func fsNow(ctx context.Context, root string) time.Time {
	now := time.Now().UTC()
	out, err := git(ctx, root, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return now
	}
	f, err := os.CreateTemp(strings.TrimSpace(string(out)), "corral-baseline-*")
	if err != nil {
		return now
	}
	defer os.Remove(f.Name())
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return now
	}
	return fi.ModTime().UTC()
}
