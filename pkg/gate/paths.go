package gate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// Limits on path resolution, so a hostile tree of symlinks cannot make a
// judgement slow.
const (
	maxSymlinkHops = 40
	maxPathParts   = 256
)

var errTooManyLinks = errors.New("too many levels of symbolic links")

// realPath resolves p, which must be absolute, to the path the kernel
// would reach: every existing component is resolved through symlinks,
// ".." goes to the parent of what was reached so far (as the kernel does,
// not lexically), and once a component does not exist the rest is joined
// lexically, as for a file about to be created.
func realPath(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("path %q is not absolute", p)
	}
	return realPathFrom(string(filepath.Separator), p)
}

// realPathFrom resolves rel from base, which must already be a real
// path (as the worktree and every judged directory are), so its own
// components need no second look. An absolute rel starts from the root.
func realPathFrom(base, rel string) (string, error) {
	pending := splitPath(rel)
	resolved := base
	if filepath.IsAbs(rel) {
		resolved = string(filepath.Separator)
	}
	missing := false
	hops := 0
	for steps := 0; len(pending) > 0; steps++ {
		if steps > maxPathParts+maxSymlinkHops*maxPathParts {
			return "", errTooManyLinks
		}
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			continue
		}
		next := filepath.Join(resolved, part)
		if missing {
			resolved = next
			continue
		}
		info, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || isNotDir(err):
			missing = true
			resolved = next
			continue
		case err != nil:
			return "", err
		}
		if info.Mode()&fs.ModeSymlink == 0 {
			resolved = next
			continue
		}
		hops++
		if hops > maxSymlinkHops {
			return "", errTooManyLinks
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			resolved = string(filepath.Separator)
		}
		parts := splitPath(target)
		if len(parts)+len(pending) > maxPathParts {
			return "", errTooManyLinks
		}
		pending = append(parts, pending...)
	}
	return resolved, nil
}

func splitPath(p string) []string {
	return strings.Split(filepath.ToSlash(p), "/")
}

// isNotDir reports ENOTDIR: a component that is a file, which makes the
// rest of the path as absent as a missing component does.
func isNotDir(err error) bool {
	return errors.Is(err, syscall.ENOTDIR)
}

// within reports whether p is root or below it. Both must be clean.
func within(p, root string) bool {
	if root == string(filepath.Separator) {
		return true
	}
	return p == root || (len(p) > len(root) && p[len(root)] == filepath.Separator && strings.HasPrefix(p, root))
}

// cwdSet is the set of directories a command may be running in. It
// starts as the worktree; every static cd in the command adds what it can
// reach, because the gate cannot tell which branch runs. unknown means a
// cd went somewhere the gate cannot compute.
type cwdSet struct {
	dirs    []string
	unknown bool
}

// target is one place a path argument resolves to, with the text shown
// in reasons.
type target struct {
	shown string
	real  string
}

// resolveArg resolves a path argument under every candidate directory.
// An error means at least one candidate cannot be resolved.
func (g *Gate) resolveArg(value string, cwds cwdSet) ([]target, error) {
	if filepath.IsAbs(value) {
		real, err := realPath(value)
		if err != nil {
			return nil, fmt.Errorf("cannot resolve %s: %w", value, err)
		}
		return []target{{shown: value, real: real}}, nil
	}
	if cwds.unknown {
		return nil, fmt.Errorf("%s is relative to a directory the command changes to, which the gate cannot compute", value)
	}
	out := make([]target, 0, len(cwds.dirs))
	for _, dir := range cwds.dirs {
		// Not filepath.Join: it would clean "link/.." lexically, while
		// the kernel resolves link first.
		real, err := realPathFrom(dir, value)
		if err != nil {
			return nil, fmt.Errorf("cannot resolve %s: %w", value, err)
		}
		out = append(out, target{shown: value, real: real})
	}
	return out, nil
}

// relToWorktree returns p relative to the worktree, if p is inside it.
func (g *Gate) relToWorktree(p string) (string, bool) {
	if !within(p, g.worktree) {
		return "", false
	}
	rel, err := filepath.Rel(g.worktree, p)
	if err != nil {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// harmlessDevice reports device files that reading or writing never
// touches a real file.
func harmlessDevice(p string) bool {
	switch filepath.Clean(p) {
	case "/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdin", "/dev/stdout",
		"/dev/stderr", "/dev/tty", "/dev/fd/0", "/dev/fd/1", "/dev/fd/2":
		return true
	}
	return false
}
