package reliability

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/testenv"
)

// shellAllow are the session's allow patterns for the commands shellGen
// writes (the built-in allowlist has printf, echo, sed, cat, sleep): each
// is still judged as an edit, which inside the worktree is allowed.
var shellAllow = []string{"mv *", "cp *", "rm *", "mkdir *", "truncate *", "touch *", "tee *", "ln *"}

// holdCommand ends every turn of the shell-writes scenario: no policy
// allows it, so the gate asks, and the turn stays open (its captured
// changes revertible) until the test answers.
const holdCommand = "corral-hold-for-review"

// words are what generated text is made of; sed scripts replace some.
var words = []string{"alpha", "beta", "gamma", "delta", "omega", "func", "return", "nil", "TODO", "x := 1"}

// shellGen writes random shell commands that change a worktree in every
// way #20 §1 lists: new files, appends, sed -i, truncation, deletions,
// renames of files and folders, copies, binary files, untracked and
// git-ignored files, symlinks, folders and files replacing each other, nested folders, and files written by a background
// child the command waits for. It follows which files exist (as far as a
// command's effect on existence goes) so that most commands act on real
// files; a command that fails does no harm.
type shellGen struct {
	r     *rand.Rand
	files map[string]bool
	fresh int
}

func newShellGen(r *rand.Rand, files []string) *shellGen {
	g := &shellGen{r: r, files: map[string]bool{}}
	for _, f := range files {
		g.files[f] = true
	}
	return g
}

// save and restore bracket a turn whose changes will all be rejected.
func (g *shellGen) save() map[string]bool {
	saved := make(map[string]bool, len(g.files))
	for f := range g.files {
		saved[f] = true
	}
	return saved
}

func (g *shellGen) restore(saved map[string]bool) { g.files = saved }

func (g *shellGen) existing() string {
	if len(g.files) == 0 {
		return g.newPath("")
	}
	all := slices.Sorted(maps.Keys(g.files))
	return all[g.r.IntN(len(all))]
}

// folders lists the folders holding known files.
func (g *shellGen) folders() []string {
	set := map[string]bool{}
	for f := range g.files {
		for d := path.Dir(f); d != "."; d = path.Dir(d) {
			set[d] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

// newPath names a file that does not exist yet, in a known folder, an
// ignored one, or (with dir "") the worktree's root.
func (g *shellGen) newPath(ext string) string {
	g.fresh++
	name := fmt.Sprintf("f%d%s", g.fresh, ext)
	dirs := append([]string{"", "build", "src"}, g.folders()...)
	if d := dirs[g.r.IntN(len(dirs))]; d != "" {
		return d + "/" + name
	}
	return name
}

func (g *shellGen) text(lines int) string {
	var b strings.Builder
	for range lines {
		for j := range 1 + g.r.IntN(4) {
			if j > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[g.r.IntN(len(words))])
		}
		b.WriteString(`\n`)
	}
	return b.String()
}

// binary is a printf format of random bytes, NULs included.
func (g *shellGen) binary(n int) string {
	var b strings.Builder
	b.WriteString(`\000`)
	for range n {
		fmt.Fprintf(&b, `\%03o`, g.r.IntN(256))
	}
	return b.String()
}

func (g *shellGen) add(p string) { g.files[p] = true }

// moveUnder renames every known file under folder from to folder to.
func (g *shellGen) moveUnder(from, to string) {
	for f := range g.files {
		if strings.HasPrefix(f, from+"/") {
			delete(g.files, f)
			g.files[to+f[len(from):]] = true
		}
	}
}

func (g *shellGen) removeUnder(dir string) {
	for f := range g.files {
		if strings.HasPrefix(f, dir+"/") {
			delete(g.files, f)
		}
	}
}

// command is one shell call: one to three commands.
func (g *shellGen) command() string {
	n := 1 + g.r.IntN(3)
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.one()
	}
	return strings.Join(parts, "; ")
}

// one is a single command (or a short compound one).
func (g *shellGen) one() string {
	switch g.r.IntN(22) {
	case 0, 1: // a new text file
		p := g.newPath(".txt")
		g.add(p)
		return fmt.Sprintf("printf '%s' > %s", g.text(1+g.r.IntN(30)), p)
	case 2: // the model's favourite
		p := g.newPath(".txt")
		g.add(p)
		return fmt.Sprintf("echo %s > %s", words[g.r.IntN(5)], p)
	case 3, 4: // an append
		p := g.existing()
		g.add(p)
		return fmt.Sprintf("printf '%s' >> %s", g.text(1+g.r.IntN(5)), p)
	case 5, 6: // sed -i
		scripts := []string{"s/alpha/ALPHA/g", "1d", "2a inserted by sed", "s/beta/b/;5d", "$d"}
		return fmt.Sprintf("sed -i '%s' %s", scripts[g.r.IntN(len(scripts))], g.existing())
	case 7: // truncation: to nothing, to a few bytes, or longer (NULs)
		p := g.existing()
		g.add(p)
		sizes := []string{"0", "3", "+5"}
		return fmt.Sprintf("truncate -s %s %s", sizes[g.r.IntN(len(sizes))], p)
	case 8:
		p := g.existing()
		g.add(p)
		return ": > " + p
	case 9: // a deletion
		p := g.existing()
		delete(g.files, p)
		return "rm -f " + p
	case 10: // a rename, to a new name or over a file
		from := g.existing()
		to := g.newPath(path.Ext(from))
		if g.r.IntN(3) == 0 {
			to = g.existing()
		}
		if from == to {
			return "true"
		}
		delete(g.files, from)
		g.add(to)
		return fmt.Sprintf("mv %s %s", from, to)
	case 11: // a folder renamed or removed whole
		dirs := g.folders()
		if len(dirs) == 0 {
			return "true"
		}
		d := dirs[g.r.IntN(len(dirs))]
		if g.r.IntN(3) == 0 {
			g.removeUnder(d)
			return "rm -rf " + d
		}
		g.fresh++
		to := fmt.Sprintf("moved%d", g.fresh)
		g.moveUnder(d, to)
		return fmt.Sprintf("mv %s %s", d, to)
	case 12: // a copy
		from, to := g.existing(), g.newPath(".txt")
		g.add(to)
		return fmt.Sprintf("cp %s %s", from, to)
	case 13: // a binary file, new or over an old one
		p := g.newPath(".bin")
		if g.r.IntN(2) == 0 {
			p = g.existing()
		}
		g.add(p)
		return fmt.Sprintf("printf '%s' > %s", g.binary(1+g.r.IntN(64)), p)
	case 14: // binary bytes appended to a (text) file
		p := g.existing()
		g.add(p)
		return fmt.Sprintf("printf '%s' >> %s", g.binary(1+g.r.IntN(8)), p)
	case 15: // nested folders made on the way
		g.fresh++
		p := fmt.Sprintf("n%d/deep/er/f.txt", g.fresh)
		g.add(p)
		return fmt.Sprintf("mkdir -p %s && printf '%s' > %s", path.Dir(p), g.text(3), p)
	case 16: // written by a background child the command waits for
		p := g.newPath(".txt")
		g.add(p)
		return fmt.Sprintf("(sleep 0.01; printf '%s' > %s) & wait", g.text(2), p)
	case 17: // ignored files: a log through tee, a build product
		if g.r.IntN(2) == 0 {
			g.fresh++
			p := fmt.Sprintf("run%d.log", g.fresh)
			g.add(p)
			return fmt.Sprintf("echo %s | tee -a %s", words[g.r.IntN(len(words))], p)
		}
		g.fresh++
		p := fmt.Sprintf("build/obj%d.o", g.fresh)
		g.add(p)
		return fmt.Sprintf("mkdir -p build && printf '%s' > %s", g.binary(16), p)
	case 18: // replaced through a temporary file, as editors and formatters do
		p := g.existing()
		g.add(p)
		return fmt.Sprintf("printf '%s' > %s.tmp && mv %s.tmp %s", g.text(4), p, p, p)
	case 19: // a symlink to a file of the worktree
		p, target := g.newPath(".link"), g.existing()
		g.add(p)
		return fmt.Sprintf("ln -s %s %s", path.Base(target), p)
	case 20: // a folder replaced by a file, or a file by a folder
		dirs := g.folders()
		if len(dirs) == 0 || g.r.IntN(2) == 0 {
			p := g.existing()
			delete(g.files, p)
			g.add(p + "/inner.txt")
			return fmt.Sprintf("rm -f %s && mkdir %s && echo inner > %s/inner.txt", p, p, p)
		}
		d := dirs[g.r.IntN(len(dirs))]
		g.removeUnder(d)
		g.add(d)
		return fmt.Sprintf("rm -rf %s && printf '%s' > %s", d, g.text(2), d)
	default: // touched without a change, or an empty file made
		if g.r.IntN(2) == 0 {
			return "touch " + g.existing()
		}
		p := g.newPath(".empty")
		g.add(p)
		return "touch " + p
	}
}

// lateFIFO is the FIFO the scenario's background writers report on once
// they have written: neither the capture nor the tree snapshots follow
// FIFOs.
const lateFIFO = ".late.fifo"

// late is a command that leaves a writer running past its own end (no
// wait): a moment later it appends to an existing file, or to the file
// path (which the engine's edit tool wrote) when given, then says so on
// lateFIFO.
func (g *shellGen) late(path string) string {
	if path == "" {
		path = g.existing()
	}
	g.add(path)
	return fmt.Sprintf("(sleep 0.05; printf '%s' >> %s; echo > %s) >/dev/null 2>&1 &", g.text(1+g.r.IntN(3)), path, lateFIFO)
}

// engineWrite is a new file the engine's own edit tool writes: its path
// and content.
func (g *shellGen) engineWrite() (path, content string) {
	path = g.newPath(".txt")
	g.add(path)
	return path, strings.ReplaceAll(g.text(1+g.r.IntN(10)), `\n`, "\n")
}

// seedRepo makes a git repository with tracked text and binary files in
// nested folders, committed; an untracked file; and ignored files. It
// returns every file's path.
func seedRepo(t *testing.T, dir string, r *rand.Rand) []string {
	t.Helper()
	testenv.NeedGit(t)
	g := newShellGen(r, nil)
	long := strings.ReplaceAll(g.text(200), `\n`, "\n")
	files := map[string]string{
		".gitignore":       "*.log\nbuild/\n",
		"README.md":        "# seed\n\nalpha beta\n",
		"src/main.txt":     long,
		"src/pkg/util.txt": strings.ReplaceAll(g.text(20), `\n`, "\n"),
		"docs/guide.md":    strings.ReplaceAll(g.text(40), `\n`, "\n"),
		"data.bin":         "\x00\x01\x02binary\xff\xfe",
	}
	tracked := make([]string, 0, len(files))
	for p := range files {
		tracked = append(tracked, p)
	}
	for p, c := range map[string]string{
		"notes/todo.txt": "untracked\nalpha\n",
		"app.log":        "ignored log\n",
		"build/cache.o":  "\x00ignored build product\x00",
	} {
		files[p] = c
	}
	var all []string
	for p, c := range files {
		abs := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(abs, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
		all = append(all, p)
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		append([]string{"add", "--"}, tracked...),
		{"-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", "seed"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	slices.Sort(all)
	return all
}
