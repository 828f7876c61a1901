//go:build linux

// Package smallfs gives a test a small, real file system that fills up: a
// tmpfs of a chosen size mounted in a private mount namespace, so that a
// full disk (ENOSPC) is met through the kernel and not a fake, and the
// mount dies with the process whatever happens to it.
//
// The test re-runs itself in a child process that has its own mount
// namespace (and its own user namespace when it is not root); Dir returns
// the mounted folder in that child and "" in the parent, which only reports
// the child's outcome:
//
//	func TestFullDisk(t *testing.T) {
//		dir := smallfs.Dir(t, 2<<20)
//		if dir == "" {
//			return // the child ran the test
//		}
//		... fill dir ...
//	}
//
// Where namespaces or tmpfs mounts are not allowed the test is skipped with
// the reason, and fails when CI is set: nothing is silently skipped in CI.
package smallfs

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

// envDir tells the child process the size to mount.
const envSize = "CORRAL_SMALLFS_SIZE"

// InChild reports whether this process is the child Dir runs a test in.
func InChild() bool { return os.Getenv(envSize) != "" }

// Dir returns a folder on a fresh tmpfs of size bytes in the child process,
// and "" in the parent once the child has run the test.
func Dir(t *testing.T, size int64) string {
	t.Helper()
	if os.Getenv(envSize) != "" {
		return mount(t)
	}
	runChild(t, size)
	return ""
}

func runChild(t *testing.T, size int64) {
	t.Helper()
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(run, "/"), "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", envSize, size))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() != 0 {
		cmd.SysProcAttr.Cloneflags |= syscall.CLONE_NEWUSER
		cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Geteuid(), Size: 1}}
		cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getegid(), Size: 1}}
	}
	out, err := cmd.CombinedOutput()
	text := string(out)
	switch {
	case err != nil && strings.Contains(text, skipMark):
		unavailable(t, extract(text))
	case err != nil && cmd.ProcessState == nil:
		unavailable(t, fmt.Sprintf("cannot start a process in a new mount namespace: %v", err))
	case err != nil:
		t.Fatalf("on a small tmpfs: %v\n%s", err, text)
	case strings.Contains(text, "--- SKIP"):
		t.Skipf("skipped on the small tmpfs:\n%s", text)
	case !strings.Contains(text, "--- PASS"):
		t.Fatalf("the test did not run on the small tmpfs:\n%s", text)
	default:
		t.Logf("on a small tmpfs:\n%s", text)
	}
}

// skipMark prefixes the child's report that it could not mount.
const skipMark = "smallfs-unavailable: "

func extract(text string) string {
	i := strings.Index(text, skipMark)
	rest := text[i+len(skipMark):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

func mount(t *testing.T) string {
	t.Helper()
	fail := func(format string, args ...any) string {
		// The parent turns this into a skip, or a failure in CI.
		fmt.Printf(skipMark+format+"\n", args...)
		os.Exit(3)
		return ""
	}
	// Mounts made here must not propagate back to the parent's namespace.
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fail("make mounts private: %v", err)
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+os.Getenv(envSize)+",mode=0700"); err != nil {
		return fail("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// unavailable skips a test whose requirement is missing, and fails it in
// CI, where every test must run.
func unavailable(t *testing.T, reason string) {
	t.Helper()
	if testenv.InCI() {
		t.Fatalf("%s [CI is set: a test never skips in CI]", reason)
	}
	t.Skip("skipped: " + reason)
}
