package hunks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
	"github.com/corral-dev/corral/pkg/hunks"
)

// The differential test against git: HUNKS_GIT_PAIRS sets how many file
// pairs it generates, HUNKS_GIT_SEED the random seed.
const (
	defaultGitPairs = 2000
	gitBatch        = 250 // pairs per git apply call
)

// TestGitAgrees generates file pairs and checks, for each, that
// (a) the edit's patch applies with git apply and gives the new version,
// (b) git apply of a random subset of hunks gives what Apply gives, and
// (c) reverting that subset from the new version gives what git apply of
// the complement gives.
func TestGitAgrees(t *testing.T) {
	pairs := envInt(t, "HUNKS_GIT_PAIRS", defaultGitPairs)
	seed := envInt(t, "HUNKS_GIT_SEED", 1)
	t.Logf("%d pairs from seed %d (HUNKS_GIT_PAIRS, HUNKS_GIT_SEED)", pairs, seed)
	r := rand.New(rand.NewPCG(uint64(seed), 0))
	repo := newGitRepo(t)
	for start := 0; start < pairs; start += gitBatch {
		var batch []*gitCase
		for k := start; k < min(start+gitBatch, pairs); k++ {
			c, err := newGitCase(r, k)
			if err != nil {
				t.Fatal(err)
			}
			batch = append(batch, c)
		}
		repo.check(t, batch)
		if t.Failed() {
			return
		}
	}
}

// gitCase is a generated pair with its edit, a random subset of its hunks,
// and what Apply makes of the subset and of its complement.
type gitCase struct {
	pair
	edit                       *hunks.Edit
	subset, complement         []string
	withSubset, withComplement hunks.Snapshot
}

// newGitCase diffs the k-th pair and checks the library's own round trips.
func newGitCase(r *rand.Rand, k int) (*gitCase, error) {
	c := &gitCase{pair: randomPair(r, k)}
	fail := func(format string, args ...any) (*gitCase, error) {
		return nil, fmt.Errorf("%v\n%s", c.pair, fmt.Sprintf(format, args...))
	}
	var err error
	if c.edit, err = hunks.Diff(c.name, c.old, c.new); err != nil {
		return fail("Diff: %v", err)
	}
	e := c.edit
	for _, id := range e.IDs() {
		if r.IntN(2) == 0 {
			c.subset = append(c.subset, id)
		} else {
			c.complement = append(c.complement, id)
		}
	}
	if got, err := e.Apply(c.old, e.IDs()); err != nil || !sameSnapshot(got, c.new) {
		return fail("Apply(old, all) = %s, %v; want the new version", show(got), err)
	}
	if got, err := e.Revert(c.new, e.IDs()); err != nil || !sameSnapshot(got, c.old) {
		return fail("Revert(new, all) = %s, %v; want the old version", show(got), err)
	}
	if c.withSubset, err = e.Apply(c.old, c.subset); err != nil {
		return fail("Apply(old, %v): %v", c.subset, err)
	}
	if c.withComplement, err = e.Apply(c.old, c.complement); err != nil {
		return fail("Apply(old, %v): %v", c.complement, err)
	}
	if got, err := e.Revert(c.new, c.subset); err != nil || !sameSnapshot(got, c.withComplement) {
		return fail("Revert(new, %v) = %s, %v; want Apply(old, %v) = %s", c.subset, show(got), err, c.complement, show(c.withComplement))
	}
	// On a drifted file a hunk lands where it belongs or not at all.
	if got, err := e.Apply(c.withSubset, c.complement); err == nil && !sameSnapshot(got, c.new) {
		return fail("Apply(Apply(old, %v), %v) misapplied: %s", c.subset, c.complement, show(got))
	} else if err != nil && !errors.Is(err, hunks.ErrConflict) {
		return fail("Apply(Apply(old, %v), %v): %v", c.subset, c.complement, err)
	}
	if !e.Binary {
		var decoded hunks.Edit
		data, err := json.Marshal(e)
		if err == nil {
			err = json.Unmarshal(data, &decoded)
		}
		if err != nil {
			return fail("JSON round trip: %v", err)
		}
		if got, err := decoded.Apply(c.old, c.subset); err != nil || !sameSnapshot(got, c.withSubset) {
			return fail("Apply after a JSON round trip = %s, %v; want %s", show(got), err, show(c.withSubset))
		}
	}
	return c, nil
}

// gitRepo is a scratch repository run without user or system config.
type gitRepo struct {
	dir string
	env []string
}

func newGitRepo(t testing.TB) *gitRepo {
	t.Helper()
	testenv.NeedGit(t)
	dir := t.TempDir()
	g := &gitRepo{dir: dir, env: append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL="+os.DevNull, "HOME="+dir, "LC_ALL=C")}
	if out, err := g.git(nil, "init", "-q"); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return g
}

func (g *gitRepo) git(stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command("git", append([]string{"-c", "core.autocrlf=false", "-c", "core.safecrlf=false"}, args...)...)
	cmd.Dir = g.dir
	cmd.Env = g.env
	cmd.Stdin = bytes.NewReader(stdin)
	return cmd.CombinedOutput()
}

// gitCheck is one of the three comparisons: which patch of a case to
// apply, and what the file must then hold.
type gitCheck struct {
	dir   string
	patch func(e *hunks.Edit, c *gitCase) ([]byte, error)
	want  func(c *gitCase) hunks.Snapshot
}

var gitChecks = []gitCheck{
	{"all",
		func(e *hunks.Edit, c *gitCase) ([]byte, error) { return e.Patch() },
		func(c *gitCase) hunks.Snapshot { return c.new }},
	{"subset",
		func(e *hunks.Edit, c *gitCase) ([]byte, error) { return e.PatchHunks(c.subset) },
		func(c *gitCase) hunks.Snapshot { return c.withSubset }},
	{"complement",
		func(e *hunks.Edit, c *gitCase) ([]byte, error) { return e.PatchHunks(c.complement) },
		func(c *gitCase) hunks.Snapshot { return c.withComplement }},
}

// patchIn renders a case's patch for a check, naming the file inside the
// check's directory.
func (chk gitCheck) patchIn(c *gitCase) ([]byte, error) {
	e := *c.edit
	e.Path = chk.dir + "/" + c.name
	return chk.patch(&e, c)
}

// check writes every case's old version into each check's directory,
// applies all their patches with one git apply call, and compares each
// file with what the check expects.
func (g *gitRepo) check(t *testing.T, batch []*gitCase) {
	t.Helper()
	var all bytes.Buffer
	for _, chk := range gitChecks {
		if err := os.RemoveAll(filepath.Join(g.dir, chk.dir)); err != nil {
			t.Fatal(err)
		}
		for _, c := range batch {
			writeSnapshot(t, filepath.Join(g.dir, chk.dir, c.name), c.old)
			patch, err := chk.patchIn(c)
			if err != nil {
				t.Fatalf("%v\n%s patch: %v", c.pair, chk.dir, err)
			}
			all.Write(patch)
		}
	}
	if all.Len() > 0 {
		if out, err := g.git(all.Bytes(), "apply", "--whitespace=nowarn", "-"); err != nil {
			g.isolate(t, batch, out)
			return
		}
	}
	for _, chk := range gitChecks {
		for _, c := range batch {
			got := readSnapshot(t, filepath.Join(g.dir, chk.dir, c.name))
			if want := chk.want(c); !sameSnapshot(got, want) {
				patch, _ := chk.patchIn(c)
				t.Errorf("%s: git apply gave %s, want %s\n%v\npatch:\n%s", chk.dir, show(got), show(want), c.pair, patch)
			}
		}
	}
}

// isolate finds which patch of a batch git rejected, to report it. git
// apply changes nothing when it rejects any patch, so every file is still
// its old version and each patch can be tried on its own.
func (g *gitRepo) isolate(t *testing.T, batch []*gitCase, batchOut []byte) {
	t.Helper()
	for _, chk := range gitChecks {
		for _, c := range batch {
			patch, _ := chk.patchIn(c)
			if len(patch) == 0 {
				continue
			}
			if out, err := g.git(patch, "apply", "--whitespace=nowarn", "--check", "-"); err != nil {
				t.Errorf("%s: git apply rejected the patch: %v\n%s\n%v\npatch:\n%s", chk.dir, err, out, c.pair, patch)
				return
			}
		}
	}
	t.Errorf("git apply rejected the batch but no single patch:\n%s", batchOut)
}

func writeSnapshot(t testing.TB, path string, s hunks.Snapshot) {
	t.Helper()
	if !s.Exists {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, s.Data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readSnapshot(t testing.TB, path string) hunks.Snapshot {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return hunks.Snapshot{}
	}
	if err != nil {
		t.Fatal(err)
	}
	return hunks.Present(data)
}

func sameSnapshot(a, b hunks.Snapshot) bool {
	return a.Exists == b.Exists && bytes.Equal(a.Data, b.Data)
}

func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		t.Fatalf("%s=%q: %v", name, v, err)
	}
	return n
}
