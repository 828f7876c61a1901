package cgroup

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// subtreePrefix starts the name of every subtree of runners' leaves, which
// is how a leaf found through a runner's /proc/PID/cgroup is recognised as
// one (Tree.LeafOf).
const subtreePrefix = "corral-"

// SubtreeName is the name of the subtree holding the leaves of the
// supervisor whose state folder is key: one per state folder, so that a
// supervisor restarted on it finds its predecessor's leaves, and two
// supervisors on different folders never sweep each other's.
func SubtreeName(key string) string {
	sum := sha256.Sum256([]byte(key))
	return subtreePrefix + hex.EncodeToString(sum[:8])
}

// Tree is a supervisor's subtree of runners' leaves.
type Tree struct {
	mount  string // where the cgroup2 hierarchy is mounted
	own    string // the supervisor's cgroup when it opened the tree
	dir    string // the subtree
	limits Limits
}

// place is a cgroup2 mount and the mounted hierarchy's root within it.
type place struct{ mount, root string }

// dir returns the folder of cgroup path rel (a /proc/PID/cgroup path).
func (p place) dir(rel string) (string, bool) {
	if p.root != "/" {
		if rel != p.root && !strings.HasPrefix(rel, p.root+"/") {
			return "", false
		}
		rel = strings.TrimPrefix(rel, p.root)
	}
	return filepath.Join(p.mount, rel), true
}

// Open makes (or finds) subtree name in this process's cgroup v2, where
// runners' leaves go. It fails with an UnavailableError where cgroup v2
// is not mounted or this process may not make cgroups in its own.
func Open(name string) (*Tree, error) {
	if !strings.HasPrefix(name, subtreePrefix) || strings.Contains(name, "/") {
		return nil, fmt.Errorf("%q is not a subtree's name (SubtreeName)", name)
	}
	own, p, err := self()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(own, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, &UnavailableError{What: "cgroup v2", Reason: fmt.Sprintf("cannot make a cgroup in this process's own (%s): %v", own, err)}
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
		return nil, &UnavailableError{What: "cgroup v2", Reason: fmt.Sprintf("%s is not a cgroup: %v", dir, err)}
	}
	return &Tree{mount: p.mount, own: own, dir: dir}, nil
}

// Check reports whether this process could open a Tree: cgroup v2 is
// mounted and its own cgroup is writable.
func Check() error {
	own, _, err := self()
	if err != nil {
		return err
	}
	if err := unix.Access(own, unix.W_OK); err != nil {
		return &UnavailableError{What: "cgroup v2", Reason: fmt.Sprintf("this process's cgroup %s is not writable: %v", own, err)}
	}
	return nil
}

// Dir is the subtree's folder.
func (t *Tree) Dir() string { return t.dir }

// SetLimits enables the controllers l needs in the subtree and has every
// leaf made from then on get l. The controllers must be offered to this
// process's cgroup (its cgroup.controllers). To pass them on, a cgroup
// other than the root must hold no process itself (cgroup v2's "no
// internal processes" rule): when this process is the only one in its
// cgroup, it moves into a leaf of its own, "supervisor", first (as
// systemd asks of a service with Delegate=yes). It fails with an
// UnavailableError saying which controller is missing and why.
func (t *Tree) SetLimits(l Limits) error {
	if err := l.Check(); err != nil {
		return err
	}
	want := l.Controllers()
	if len(want) == 0 {
		t.limits = l
		return nil
	}
	offered := words(t.own, "cgroup.controllers")
	for _, c := range want {
		if !slices.Contains(offered, c) {
			return &UnavailableError{What: "the " + c + " controller", Reason: fmt.Sprintf(
				"cgroup %s does not offer it (its cgroup.controllers: %q): it is bound to a cgroup v1 hierarchy, or the cgroup above does not delegate it", t.own, strings.Join(offered, " "))}
		}
	}
	enabled := words(t.own, "cgroup.subtree_control")
	var missing []string
	for _, c := range want {
		if !slices.Contains(enabled, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 && t.own != t.mount {
		if err := t.leaveOwn(); err != nil {
			return err
		}
	}
	if err := enable(t.own, missing); err != nil {
		return err
	}
	if err := enable(t.dir, want); err != nil {
		return err
	}
	t.limits = l
	return nil
}

// leaveOwn moves this process out of its own cgroup into a leaf of it, so
// that the cgroup may pass controllers on; it refuses when other processes
// share the cgroup.
func (t *Tree) leaveOwn() error {
	pids, err := procs(t.own)
	if err != nil {
		return &UnavailableError{What: "cgroup controllers", Reason: err.Error()}
	}
	self := os.Getpid()
	for _, pid := range pids {
		if pid != self {
			return &UnavailableError{What: "cgroup controllers", Reason: fmt.Sprintf(
				"cgroup %s also holds process %d, so it cannot pass controllers on (run the supervisor in a cgroup of its own, e.g. a systemd service with Delegate=yes)", t.own, pid)}
		}
	}
	leaf := filepath.Join(t.own, "supervisor")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return &UnavailableError{What: "cgroup controllers", Reason: err.Error()}
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(self)), 0); err != nil {
		return &UnavailableError{What: "cgroup controllers", Reason: fmt.Sprintf("moving the supervisor into %s: %v", leaf, err)}
	}
	return nil
}

func enable(dir string, controllers []string) error {
	if len(controllers) == 0 {
		return nil
	}
	var b strings.Builder
	for _, c := range controllers {
		b.WriteString(" +" + c)
	}
	if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(b.String()[1:]), 0); err != nil {
		return &UnavailableError{What: "cgroup controllers " + strings.Join(controllers, ", "), Reason: fmt.Sprintf("enabling them in %s: %v", dir, err)}
	}
	return nil
}

// NewLeaf makes a leaf for one runner, named prefix and a random suffix
// (cgroup v2 cannot rename, and a session's next runner may start while
// its last one's leaf is being swept), with the tree's limits.
func (t *Tree) NewLeaf(prefix string) (*Leaf, error) {
	var r [6]byte
	rand.Read(r[:])
	dir := filepath.Join(t.dir, prefix+"-"+hex.EncodeToString(r[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, fmt.Errorf("runner cgroup: %w", err)
	}
	l := &Leaf{dir: dir}
	for _, f := range t.limits.files() {
		if err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0); err != nil {
			os.Remove(dir)
			return nil, fmt.Errorf("runner cgroup: %s: %w", f[0], err)
		}
	}
	return l, nil
}

// LeafOf returns the leaf process pid is in, when it is a runner's leaf
// (in a subtree a supervisor made, wherever that supervisor ran); else
// nil. A re-attaching supervisor keeps the leaf of the runner it adopts.
func (t *Tree) LeafOf(pid int) (*Leaf, error) {
	rel, err := cgroupOf(strconv.Itoa(pid))
	if err != nil {
		return nil, err
	}
	own, p, err := self()
	if err != nil {
		return nil, err
	}
	dir, ok := p.dir(rel)
	// A leaf of a subtree, and never a cgroup this process is in, or
	// above it.
	if !ok || !isLeafDir(dir) || own == dir || strings.HasPrefix(own, dir+"/") {
		return nil, nil
	}
	return &Leaf{dir: dir}, nil
}

// Leaves returns the leaves in the subtree.
func (t *Tree) Leaves() ([]*Leaf, error) {
	des, err := os.ReadDir(t.dir)
	if err != nil {
		return nil, err
	}
	var out []*Leaf
	for _, de := range des {
		if de.IsDir() {
			out = append(out, &Leaf{dir: filepath.Join(t.dir, de.Name())})
		}
	}
	return out, nil
}

// Close removes the subtree when no leaf is left in it (a runner left
// running for the next supervisor keeps its leaf, and so the subtree).
func (t *Tree) Close() error {
	err := os.Remove(t.dir)
	if err == nil || errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.ENOTEMPTY) {
		return nil
	}
	return err
}

// Remove sweeps every leaf of subtree name in this process's cgroup and
// removes the subtree: for tests, which clean up after a supervisor that
// could not.
func Remove(name string) error {
	if !strings.HasPrefix(name, subtreePrefix) || strings.Contains(name, "/") {
		return fmt.Errorf("%q is not a subtree's name", name)
	}
	own, _, err := self()
	if err != nil {
		return err
	}
	t := &Tree{dir: filepath.Join(own, name)}
	leaves, err := t.Leaves()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, l := range leaves {
		if _, err := l.Sweep(10 * time.Second); err != nil {
			return err
		}
	}
	if err := os.Remove(t.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// isLeafDir reports whether dir is named as a runner's leaf: a folder of
// a subtree whose name SubtreeName made. What kills every process of a
// cgroup checks it first.
func isLeafDir(dir string) bool {
	return strings.HasPrefix(filepath.Base(filepath.Dir(dir)), subtreePrefix)
}

// Leaf is one runner's cgroup.
type Leaf struct{ dir string }

// Dir is the leaf's folder.
func (l *Leaf) Dir() string { return l.dir }

// Open opens the leaf's folder, whose descriptor starts a process in it
// (syscall.SysProcAttr.CgroupFD with UseCgroupFD).
func (l *Leaf) Open() (*os.File, error) {
	return os.OpenFile(l.dir, os.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
}

// Procs returns the processes in the leaf.
func (l *Leaf) Procs() ([]int, error) { return procs(l.dir) }

// Sweep kills every process left in the leaf, waits up to timeout for it
// to be empty, and removes it. It kills with cgroup.kill (Linux 5.14 and
// later), which no fork can race, else with SIGKILL to each process listed
// until none is. It returns how many processes were there; a leaf already
// gone is no error.
func (l *Leaf) Sweep(timeout time.Duration) (int, error) {
	if !isLeafDir(l.dir) {
		return 0, fmt.Errorf("%s is not a runner's leaf: nothing killed", l.dir)
	}
	pids, err := procs(l.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	if len(pids) > 0 {
		if err := os.WriteFile(filepath.Join(l.dir, "cgroup.kill"), []byte("1"), 0); err != nil {
			killEach(pids, -1)
		}
	}
	// Even with none listed: a process that is exiting is no longer
	// listed, yet keeps the leaf populated (and rmdir busy) until it is
	// gone. A leaf gone meanwhile was swept by another (two supervisors
	// of one runner in one process, as in tests).
	if err := waitEmpty(l.dir, timeout, -1); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return len(pids), err
	}
	if err := os.Remove(l.dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return len(pids), fmt.Errorf("remove runner cgroup: %w", err)
	}
	return len(pids), nil
}

// KillOthers kills every other process of this process's cgroup and waits
// up to timeout for them to be gone; it returns how many there were. A
// runner whose cgroup is its own calls it on its way out when no
// supervisor is left to sweep the leaf after it. It cannot use
// cgroup.kill, which would kill the caller too.
func KillOthers(timeout time.Duration) (int, error) {
	own, p, err := self()
	if err != nil {
		return 0, err
	}
	// Only ever in a runner's leaf: anywhere else this process's cgroup
	// is shared with processes that are not its own (at the root, every
	// process of the machine).
	if own == p.mount || !isLeafDir(own) {
		return 0, fmt.Errorf("this process's cgroup %s is not a runner's leaf: nothing killed", own)
	}
	self := os.Getpid()
	pids, err := procs(own)
	if err != nil {
		return 0, err
	}
	n := len(pids) - 1
	if n <= 0 {
		return 0, nil
	}
	killEach(pids, self)
	return n, waitEmpty(own, timeout, self)
}

// killEach SIGKILLs each process of pids but except. A pid below 2 is
// never signalled: kill(-1) would reach every process this one may
// signal, kill(0) its whole group, kill(1) init.
func killEach(pids []int, except int) {
	for _, pid := range pids {
		if pid > 1 && pid != except {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// waitEmpty waits until the cgroup in dir holds no process but except
// (-1: none), SIGKILLing whatever it finds there again each time it looks:
// a process forked before the first kill reached its parent. It wakes on
// cgroup.events changes (the kernel notifies them as POLLPRI), so it does
// not depend on how fast the machine is.
func waitEmpty(dir string, timeout time.Duration, except int) error {
	events, err := os.Open(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		return err
	}
	defer events.Close()
	deadline := time.Now().Add(timeout)
	for {
		pids, err := procs(dir)
		if err != nil {
			return err
		}
		left := slices.DeleteFunc(pids, func(p int) bool { return p == except })
		if len(left) == 0 {
			if except >= 0 || populated(events) == 0 {
				return nil
			}
		}
		killEach(left, except)
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("cgroup %s still holds processes %v after %v", dir, left, timeout)
		}
		// A process that ignores nothing still takes a moment to exit
		// after SIGKILL: wait for the kernel to say the cgroup changed,
		// and look again at least every 50ms when a process listed
		// exits without changing populated (except is still there).
		fds := []unix.PollFd{{Fd: int32(events.Fd()), Events: unix.POLLPRI}}
		_, err = unix.Poll(fds, int(min(wait, 50*time.Millisecond)/time.Millisecond)+1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// populated reads cgroup.events' populated field: 1 while the cgroup or a
// descendant holds a process.
func populated(events *os.File) int {
	buf := make([]byte, 256)
	n, _ := events.ReadAt(buf, 0)
	for line := range strings.Lines(string(buf[:n])) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "populated "); ok {
			if v == "0" {
				return 0
			}
		}
	}
	return 1
}

func procs(dir string) ([]int, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(raw)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

func words(dir, file string) []string {
	raw, _ := os.ReadFile(filepath.Join(dir, file))
	return strings.Fields(string(raw))
}

// self returns the folder of this process's cgroup v2 and the mount it is
// under.
func self() (string, place, error) {
	rel, err := cgroupOf("self")
	if err != nil {
		return "", place{}, err
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", place{}, &UnavailableError{What: "cgroup v2", Reason: err.Error()}
	}
	for _, p := range cgroup2Mounts(mounts) {
		if dir, ok := p.dir(rel); ok {
			return dir, p, nil
		}
	}
	return "", place{}, &UnavailableError{What: "cgroup v2", Reason: "no writable cgroup2 mount holds this process's cgroup " + rel}
}

// cgroupOf returns the cgroup v2 path of process pid ("self" or a
// number): the 0:: line of /proc/PID/cgroup.
func cgroupOf(pid string) (string, error) {
	raw, err := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
	if err != nil {
		return "", &UnavailableError{What: "cgroup v2", Reason: err.Error()}
	}
	for line := range strings.Lines(string(raw)) {
		if rel, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "0::"); ok {
			if strings.HasSuffix(rel, " (deleted)") {
				return "", &UnavailableError{What: "cgroup v2", Reason: "the cgroup of process " + pid + " was removed"}
			}
			return rel, nil
		}
	}
	return "", &UnavailableError{What: "cgroup v2", Reason: "process " + pid + " is in no cgroup v2 hierarchy (/proc/" + pid + "/cgroup has no 0:: line)"}
}

// cgroup2Mounts returns the read-write cgroup2 mounts of a
// /proc/self/mountinfo: on a unified system /sys/fs/cgroup, on a hybrid
// one a folder such as /sys/fs/cgroup/unified.
func cgroup2Mounts(mountinfo []byte) []place {
	var out []place
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 6 || len(g) < 1 || g[0] != "cgroup2" {
			continue
		}
		if !slices.Contains(strings.Split(f[5], ","), "rw") {
			continue
		}
		out = append(out, place{mount: unescape(f[4]), root: unescape(f[3])})
	}
	return out
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
