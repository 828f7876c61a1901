package cgroup

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/testenv"
)

// helperEnv makes the test binary a helper process (TestMain).
const helperEnv = "CORRAL_CGROUP_TEST_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "kill-others" {
		os.Exit(killOthersHelper())
	}
	os.Exit(m.Run())
}

// killOthersHelper starts a job that leaves its session and ignores
// SIGHUP, says its pid, waits for a line on stdin, kills the rest of its
// cgroup and says how many it found.
func killOthersHelper() int {
	job := exec.Command("sleep", "300")
	job.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := job.Start(); err != nil {
		fmt.Println("error", err)
		return 1
	}
	// The pid before Release, which sets it to -1.
	fmt.Println(job.Process.Pid)
	job.Process.Release()
	bufio.NewReader(os.Stdin).ReadString('\n')
	n, err := KillOthers(10 * time.Second)
	fmt.Println(n, err)
	return 0
}

// testTree opens a subtree of its own for the test, removed (with every
// process left in it) when the test ends, passed or not.
func testTree(t *testing.T) *Tree {
	t.Helper()
	testenv.NeedCgroup2(t, Check())
	var r [4]byte
	rand.Read(r[:])
	name := SubtreeName(t.Name() + hex.EncodeToString(r[:]))
	tr, err := Open(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := Remove(name); err != nil {
			t.Errorf("cleaning up cgroup %s: %v", name, err)
		}
	})
	return tr
}

// startIn starts cmd into leaf l, as the supervisor starts a runner.
func startIn(t *testing.T, l *Leaf, cmd *exec.Cmd) {
	t.Helper()
	f, err := l.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(f.Fd())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func alive(pid int) bool {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// A zombie (state Z) is gone for every purpose here.
	_, after, _ := strings.Cut(string(raw), ") ")
	return !strings.HasPrefix(after, "Z")
}

func TestSweepKillsAJobThatLeftItsSessionAndRemovesTheLeaf(t *testing.T) {
	tr := testTree(t)
	l, err := tr.NewLeaf("s1")
	if err != nil {
		t.Fatal(err)
	}
	// A shell that starts a job in a session of its own, ignoring
	// SIGHUP, says its pid and exits: the job is nobody's child here.
	sh := exec.Command("sh", "-c", `setsid sh -c 'trap "" HUP; exec sleep 300' </dev/null >/dev/null 2>&1 & echo $!`)
	sh.Stdin = nil
	out, err := sh.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	startIn(t, l, sh)
	line, _ := bufio.NewReader(out).ReadString('\n')
	sh.Wait()
	job, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || job <= 1 {
		t.Fatalf("job pid %q: %v", line, err)
	}
	if !alive(job) {
		t.Fatalf("the job %d is not running", job)
	}
	pids, err := l.Procs()
	if err != nil || !slices.Contains(pids, job) {
		t.Fatalf("the job %d is not in its leaf: %v %v", job, pids, err)
	}
	n, err := l.Sweep(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("Sweep found %d processes, want 1", n)
	}
	if alive(job) {
		t.Errorf("the job %d survived the sweep", job)
	}
	if _, err := os.Stat(l.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the leaf is still there: %v", err)
	}
	if n, err := l.Sweep(time.Second); n != 0 || err != nil {
		t.Errorf("a second sweep: %d, %v; want 0, nil", n, err)
	}
}

// startHelper starts the test binary as killOthersHelper in the cgroup
// folder dir and returns it with the pid of the job it started.
func startHelper(t *testing.T, dir string) (cmd *exec.Cmd, job int, in io.Writer, out *bufio.Reader) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=kill-others")
	in, _ = cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	startIn(t, &Leaf{dir: dir}, cmd)
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	out = bufio.NewReader(stdout)
	line, _ := out.ReadString('\n')
	job, err = strconv.Atoi(strings.TrimSpace(line))
	if err != nil || job <= 1 {
		// Never signalled: kill(-1) reaches every process there is.
		t.Fatalf("helper: %q is not a job's pid", line)
	}
	t.Cleanup(func() { syscall.Kill(job, syscall.SIGKILL) })
	if !alive(job) {
		t.Fatalf("the job %d is not running", job)
	}
	return cmd, job, in, out
}

func TestKillOthersSparesTheCaller(t *testing.T) {
	tr := testTree(t)
	l, err := tr.NewLeaf("runner")
	if err != nil {
		t.Fatal(err)
	}
	cmd, job, in, out := startHelper(t, l.Dir())
	in.Write([]byte("go\n"))
	line, _ := out.ReadString('\n')
	if got := strings.TrimSpace(line); got != "1 <nil>" {
		t.Errorf("KillOthers said %q, want 1 <nil>", got)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("the caller did not survive KillOthers: %v", err)
	}
	if alive(job) {
		t.Errorf("the job %d survived KillOthers", job)
	}
}

// KillOthers in a cgroup that is not a runner's leaf kills nothing: there
// the cgroup may be shared with anything (at the root, the whole machine).
// The helper runs in a cgroup of the test's own, beside the subtree, so
// that a broken guard could only kill the helper's own job.
func TestKillOthersRefusesOutsideARunnersLeaf(t *testing.T) {
	tr := testTree(t)
	dir := filepath.Join(filepath.Dir(tr.Dir()), "not-a-leaf-"+filepath.Base(tr.Dir()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if pids, _ := procs(dir); len(pids) > 0 {
			killEach(pids, -1)
			waitEmpty(dir, 10*time.Second, -1)
		}
		os.Remove(dir)
	})
	_, job, in, out := startHelper(t, dir)
	in.Write([]byte("go\n"))
	line, _ := out.ReadString('\n')
	if got := strings.TrimSpace(line); !strings.HasPrefix(got, "0 ") || !strings.Contains(got, "not a runner's leaf") {
		t.Errorf("KillOthers outside a leaf said %q, want a refusal", got)
	}
	if !alive(job) {
		t.Errorf("KillOthers outside a leaf killed the job %d", job)
	}
	if _, err := (&Leaf{dir: dir}).Sweep(time.Second); err == nil || !alive(job) {
		t.Errorf("Sweep of a cgroup that is not a leaf: %v (job alive: %v)", err, alive(job))
	}
}

func TestLeafOfFindsARunnersLeafOnly(t *testing.T) {
	tr := testTree(t)
	l, err := tr.NewLeaf("s2")
	if err != nil {
		t.Fatal(err)
	}
	in := exec.Command("sleep", "300")
	startIn(t, l, in)
	defer in.Wait()
	defer in.Process.Kill()
	got, err := tr.LeafOf(in.Process.Pid)
	if err != nil || got == nil || got.Dir() != l.Dir() {
		t.Errorf("LeafOf(a process in %s) = %v, %v", l.Dir(), got, err)
	}
	out := exec.Command("sleep", "300")
	if err := out.Start(); err != nil {
		t.Fatal(err)
	}
	defer out.Wait()
	defer out.Process.Kill()
	if got, err := tr.LeafOf(out.Process.Pid); got != nil || err != nil {
		t.Errorf("LeafOf(a process in the test's own cgroup) = %v, %v; want nil", got, err)
	}
	leaves, err := tr.Leaves()
	if err != nil || len(leaves) != 1 || leaves[0].Dir() != l.Dir() {
		t.Errorf("Leaves() = %v, %v", leaves, err)
	}
	if err := tr.Close(); err != nil {
		t.Errorf("Close with a leaf left: %v", err)
	}
	if _, err := os.Stat(tr.Dir()); err != nil {
		t.Errorf("Close removed a subtree that still holds a leaf: %v", err)
	}
}

// The limits either land in each leaf, where the kernel offers their
// controllers to this cgroup, or are refused as unavailable, naming the
// controller: which one happens is the kernel's to say (cgroup.controllers).
func TestLimitsLandOrAreRefusedAsTheKernelOffers(t *testing.T) {
	tr := testTree(t)
	lim := Limits{MemoryMax: 256 << 20, PidsMax: 64, CPUWeight: 50}
	offered := words(tr.own, "cgroup.controllers")
	var missing []string
	for _, c := range lim.Controllers() {
		if !slices.Contains(offered, c) {
			missing = append(missing, c)
		}
	}
	err := tr.SetLimits(lim)
	if len(missing) > 0 {
		var u *UnavailableError
		if !errors.As(err, &u) || !errors.Is(err, ErrUnavailable) {
			t.Fatalf("SetLimits with %v not offered = %v, want an UnavailableError", missing, err)
		}
		if !strings.Contains(err.Error(), "the "+missing[0]+" controller") {
			t.Errorf("the error does not name the %s controller: %v", missing[0], err)
		}
		t.Logf("refused as expected here: %v", err)
		return
	}
	var u *UnavailableError
	if errors.As(err, &u) && u.What == "cgroup controllers" && tr.own != tr.mount {
		// Offered, but this cgroup holds other processes (the go
		// command's), so it cannot pass controllers on.
		t.Logf("refused as expected here: %v", err)
		return
	}
	if err != nil {
		t.Fatalf("SetLimits with every controller offered: %v", err)
	}
	l, err := tr.NewLeaf("limited")
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"memory.max": "268435456", "pids.max": "64", "cpu.weight": "50"} {
		got, err := os.ReadFile(filepath.Join(l.Dir(), file))
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s = %q, %v; want %s", file, got, err, want)
		}
	}
}

func TestLimitsOutOfRangeAreRefused(t *testing.T) {
	for _, l := range []Limits{{MemoryMax: -1}, {PidsMax: -5}, {CPUWeight: 10001}} {
		if err := l.Check(); err == nil {
			t.Errorf("%+v passed Check", l)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"1", 1}, {"512M", 512 << 20}, {"2g", 2 << 30}, {"4KiB", 4 << 10}, {"1Ti", 1 << 40}, {"1073741824", 1 << 30},
		{"", 0}, {"0", 0}, {"-1M", 0}, {"1.5G", 0}, {"M", 0}, {"99999999999T", 0},
	} {
		got, err := ParseBytes(tc.in)
		if (err != nil) != (tc.want == 0) || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

const hybridMountinfo = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`

func TestCgroup2MountsOnEachLayout(t *testing.T) {
	for _, tc := range []struct {
		name, mountinfo string
		want            []place
	}{
		{"hybrid", hybridMountinfo, []place{{"/sys/fs/cgroup/unified", "/"}}},
		{"unified", "29 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n", []place{{"/sys/fs/cgroup", "/"}}},
		{"read-only", "29 23 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 ro\n", nil},
		{"namespaced root, escaped space", `29 23 0:26 /user.slice /tmp/a\040b rw - cgroup2 cgroup2 rw` + "\n", []place{{"/tmp/a b", "/user.slice"}}},
		{"torn", "29 23 0:26 / /sys/fs/cgroup rw", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := cgroup2Mounts([]byte(tc.mountinfo)); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	p := place{"/m", "/user.slice"}
	if d, ok := p.dir("/user.slice/u/x"); !ok || d != "/m/u/x" {
		t.Errorf("dir under the mount's root = %q, %v", d, ok)
	}
	if _, ok := p.dir("/system.slice/x"); ok {
		t.Error("a cgroup outside the mount's root was placed in it")
	}
}

func FuzzCgroup2Mounts(f *testing.F) {
	f.Add([]byte(hybridMountinfo))
	f.Add([]byte(`1 2 3:4 /a\ /b\04 rw - cgroup2 x rw`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, p := range cgroup2Mounts(b) {
			if p.mount == "" && p.root == "" {
				t.Errorf("an empty place from %q", b)
			}
		}
	})
}
