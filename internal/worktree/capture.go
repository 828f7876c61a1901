// Package worktree captures every change made to a worktree by something
// other than the engine's own edit tools — a shell command, a formatter, a
// code generator, a build — and reports it as hunk edits (pkg/hunks) that a
// reviewer can see and revert one by one. Created, modified, deleted and
// renamed files are all reported, binary files as binary edits, untracked
// and ignored files as well as tracked ones; only git's own folder (.git)
// is left out.
//
// A Capture keeps an index of the worktree (per file: size, mtime, ctime,
// inode and mode, and the git blob id of its content) and a content store
// holding the version of every file the index knows, so that a changed
// file's previous version can be diffed and put back. Files whose content
// git's index already holds are not copied: git gives them back. Where the
// system allows it (Linux), inotify follows every folder, so Before and
// After read only the paths that changed: with nothing changed, a call
// costs a read of an empty event queue whatever the size of the tree.
// Elsewhere, or when the kernel drops events (its queue is full) or runs
// out of watches, a walk of the tree compares every file's stat.
//
// Before takes the worktree as it is as the baseline, silently; After
// returns every change since the last Before or After. The runner calls
// Before when a turn starts (what changed between turns is the person's)
// and After at every point of the turn where it attributes changes: just
// before a shell command runs (what changed since the last look was made
// outside any tool call), once it has ended (the command's), and at the
// turn's end. Writes whose content was reviewed already (the engine's
// accepted edits, the runner's own writes) are announced with Expect and
// Settle, which take them into the baseline unreported. See docs/hunks.md
// for the review rule.
package worktree

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/corral-dev/corral/pkg/hunks"
)

// DefaultMaxContent is the largest file whose versions are kept. A change
// to a larger file is reported (path, sizes, blob ids) but cannot be
// reverted.
const DefaultMaxContent = 64 << 20

// Options configure a Capture.
type Options struct {
	// Store is the folder of the content store, in the session folder.
	Store string
	// MaxContent bounds the size of the versions kept; 0 means
	// DefaultMaxContent.
	MaxContent int64
	// Walk makes the capture walk the tree at every Before and After
	// instead of following it with inotify.
	Walk bool
}

// ChangeKind says what happened to a path.
type ChangeKind string

// Change kinds.
const (
	Created  ChangeKind = "create"
	Modified ChangeKind = "modify"
	Deleted  ChangeKind = "delete"
	Renamed  ChangeKind = "rename"
)

// Change is one path changed between Before and After.
type Change struct {
	Kind ChangeKind
	// Path is slash-separated and relative to the worktree; From is a
	// renamed file's previous path.
	Path, From string
	// Edit holds the hunks: text line by line, a binary file as one
	// whole-file hunk, a symlink as its target. A pure rename has none.
	// Nil when the previous version was not kept (over MaxContent).
	Edit *hunks.Edit
	// Symlink is set when the path is (or was) a symbolic link; for a
	// TypeChanged path, when it is one now.
	Symlink bool
	// TypeChanged says a file became a symlink or a symlink a file: the
	// edit goes from the one's content to the other's, and is reverted
	// whole.
	TypeChanged bool
	// Unrevertible says why the change cannot be put back, if it cannot.
	Unrevertible string
	// Mode holds the permission bits of the version before (0 for a
	// created path): a deleted file is put back with them.
	Mode fs.FileMode
}

// Capture follows one worktree.
type Capture struct {
	root       string
	store      *Store
	git        *gitBlobs
	maxContent int64

	mu    sync.Mutex
	index map[string]*entry
	// folders are the worktree's folders (not the root), each true when
	// it appeared while a command ran (in an After): a revert that leaves
	// such a folder empty removes it, so that rejecting a command's files
	// leaves no folder it made for them.
	folders map[string]bool
	// reporting is set during the scan of an After.
	reporting bool
	w         *watcher // nil: walk the tree
	unwatched error    // why w is nil
	// expected are the versions reviewed writers are about to write, by
	// path (Expect); stale are paths the next scan reads whatever the
	// watcher says (Settle).
	expected map[string][]version
	stale    map[string]bool
}

// Open indexes the worktree at root, keeping the content of every file
// git does not hold, and starts following it.
func Open(root string, opts Options) (*Capture, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	store, err := OpenStore(opts.Store)
	if err != nil {
		return nil, err
	}
	c := &Capture{root: root, store: store, git: readGitBlobs(root), maxContent: opts.MaxContent, index: map[string]*entry{}, folders: map[string]bool{}}
	if c.maxContent <= 0 {
		c.maxContent = DefaultMaxContent
	}
	if !opts.Walk {
		c.w, c.unwatched = newWatcher(root)
	}
	if _, err := c.walkAll(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Watching reports whether the capture follows the tree with inotify
// rather than walking it.
func (c *Capture) Watching() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.w != nil
}

// Unwatched tells why the capture walks the tree instead of following it
// with inotify: nil while it follows it, or when it was asked to walk.
func (c *Capture) Unwatched() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unwatched
}

// Close stops following the worktree.
func (c *Capture) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.w == nil {
		return nil
	}
	err := c.w.close()
	c.w = nil
	return err
}

// Before brings the index up to date with the worktree: whatever changed
// since the last After becomes the baseline the next After is compared
// with.
func (c *Capture) Before() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.scan()
	return err
}

// After returns every change since Before, deletions first, each group in
// path order (an order they could have been made in: reverting them last to
// first always works), and makes the worktree as it is now the baseline.
func (c *Capture) After() ([]Change, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reporting = true
	ups, err := c.scan()
	c.reporting = false
	if err != nil {
		return nil, err
	}
	return c.changes(c.unexpected(ups))
}

// update is one path whose indexed version changed: old or new is nil for
// an absent file.
type update struct {
	path     string
	old, new *entry
	data     []byte // the new content
}

// scan finds what changed since the last scan and updates the index.
func (c *Capture) scan() ([]update, error) {
	if c.w == nil {
		clear(c.stale)
		return c.walkAll()
	}
	dirty := map[string]bool{}
	for p := range c.stale {
		dirty[p] = true
	}
	clear(c.stale)
	overflow, err := c.w.drain(dirty)
	if err != nil {
		return nil, err
	}
	if overflow {
		return c.walkAll()
	}
	paths := make([]string, 0, len(dirty))
	for p := range dirty {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	var ups []update
	for _, p := range paths {
		if err := c.refreshPath(p, &ups); err != nil {
			return nil, err
		}
	}
	return ups, nil
}

// walkAll compares every file of the tree with the index, watching every
// folder it enters when following the tree.
func (c *Capture) walkAll() ([]update, error) {
	var ups []update
	seen, dirs := map[string]bool{}, map[string]bool{}
	err := walk(c.root, "", c.enterDir(dirs), func(rel string, info fs.FileInfo) error {
		seen[rel] = true
		return c.refreshFile(rel, info, &ups)
	})
	if err != nil {
		return nil, err
	}
	c.removeUnder("", seen, &ups)
	c.forgetFolders("", dirs)
	return ups, nil
}

// enterDir is the walks' folder callback: it records the folder (in dirs,
// and in the index when new) and watches it.
func (c *Capture) enterDir(dirs map[string]bool) func(rel string) error {
	return func(rel string) error {
		dirs[rel] = true
		if _, ok := c.folders[rel]; !ok && rel != "" {
			c.folders[rel] = c.reporting
		}
		return c.watchDir(rel)
	}
}

// watchDir watches a folder the walk entered; past the system's limit on
// watches the capture walks the tree from then on.
func (c *Capture) watchDir(rel string) error {
	if c.w == nil {
		return nil
	}
	if err := c.w.add(rel); err != nil {
		c.w.close()
		c.w, c.unwatched = nil, err
	}
	return nil
}

// isGone reports whether err, from a look at a path, says that nothing is
// there: the path is gone, or a folder on its way is now a file.
func isGone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// refreshPath brings the index up to date for a path an event named: a
// file, a folder (walked whole), or something gone.
func (c *Capture) refreshPath(rel string, ups *[]update) error {
	info, err := os.Lstat(c.abs(rel))
	switch {
	case isGone(err):
		c.removeUnder(rel, nil, ups)
		c.forgetFolders(rel, nil)
		return nil
	case err != nil:
		return fmt.Errorf("capture %s: %w", rel, err)
	case info.IsDir():
		if skipDir(rel) {
			return nil
		}
		seen, dirs := map[string]bool{}, map[string]bool{}
		err := walk(c.root, rel, c.enterDir(dirs), func(r string, info fs.FileInfo) error {
			seen[r] = true
			return c.refreshFile(r, info, ups)
		})
		if err != nil {
			return err
		}
		c.removeUnder(rel, seen, ups)
		c.forgetFolders(rel, dirs)
		return nil
	case tracked(info):
		// A folder that became a file: what it held is gone.
		c.removeUnder(rel, map[string]bool{rel: true}, ups)
		c.forgetFolders(rel, nil)
		return c.refreshFile(rel, info, ups)
	}
	c.removeUnder(rel, nil, ups)
	c.forgetFolders(rel, nil)
	return nil
}

// refreshFile indexes one file, reading it only when its stat changed.
func (c *Capture) refreshFile(rel string, info fs.FileInfo, ups *[]update) error {
	key := keyOf(info)
	old := c.index[rel]
	if old != nil && old.stat == key {
		return nil
	}
	data, err := readContent(c.abs(rel), info)
	if errors.Is(err, fs.ErrNotExist) {
		c.removeUnder(rel, nil, ups)
		return nil
	}
	if err != nil {
		return fmt.Errorf("capture %s: %w", rel, err)
	}
	id := hunks.BlobID(data)
	if old != nil && old.blob == id && old.stat.mode&fs.ModeSymlink == key.mode&fs.ModeSymlink {
		old.stat = key // touched, not changed
		return nil
	}
	ne := &entry{stat: key, blob: id}
	switch {
	case c.git.has(id):
		ne.kept = true
	case int64(len(data)) <= c.maxContent:
		if _, err := c.store.Put(data); err != nil {
			return err
		}
		ne.kept = true
	}
	c.index[rel] = ne
	*ups = append(*ups, update{path: rel, old: old, new: ne, data: data})
	return nil
}

// removeUnder drops from the index the file rel and every file under it
// that seen (nil: none) does not hold.
func (c *Capture) removeUnder(rel string, seen map[string]bool, ups *[]update) {
	for p, e := range c.index {
		if under(p, rel) && !seen[p] {
			delete(c.index, p)
			*ups = append(*ups, update{path: p, old: e})
		}
	}
}

// forgetFolders drops from the index the folder rel and every folder under
// it that dirs (nil: none) does not hold.
func (c *Capture) forgetFolders(rel string, dirs map[string]bool) {
	for p := range c.folders {
		if under(p, rel) && !dirs[p] {
			delete(c.folders, p)
		}
	}
}

// under reports whether p is rel or inside it ("" is the whole tree).
func under(p, rel string) bool {
	return rel == "" || p == rel || strings.HasPrefix(p, rel+"/")
}

func (c *Capture) abs(rel string) string { return filepath.Join(c.root, filepath.FromSlash(rel)) }

// content returns the version of a file the index entry e names.
func (c *Capture) content(e *entry) ([]byte, error) {
	if !e.kept {
		return nil, ErrNoContent
	}
	data, err := c.store.Get(e.blob)
	if err == nil {
		return data, nil
	}
	if c.git.has(e.blob) {
		return c.git.get(e.blob)
	}
	return nil, err
}

// changes turns index updates into changes, pairing a deleted file with a
// created one of the same content as a rename.
func (c *Capture) changes(ups []update) ([]Change, error) {
	sort.Slice(ups, func(i, j int) bool { return ups[i].path < ups[j].path })
	deleted := map[string][]int{} // blob → deleted updates
	for i, u := range ups {
		if u.new == nil {
			deleted[u.old.blob] = append(deleted[u.old.blob], i)
		}
	}
	renamedFrom, renamedTo := map[int]bool{}, map[int]bool{}
	var out []Change
	for i, u := range ups {
		if u.old != nil {
			continue
		}
		if from := deleted[u.new.blob]; len(from) > 0 {
			j := from[0]
			deleted[u.new.blob] = from[1:]
			renamedFrom[j], renamedTo[i] = true, true
			out = append(out, Change{Kind: Renamed, Path: u.path, From: ups[j].path, Symlink: isLink(u.new) || isLink(ups[j].old)})
		}
	}
	for i, u := range ups {
		if renamedFrom[i] || renamedTo[i] {
			continue
		}
		ch, err := c.change(u)
		if err != nil {
			return nil, err
		}
		out = append(out, ch)
	}
	// In an order the changes could have been made in, deletions first
	// (a folder that became a file, a file that became a folder), so
	// that reverting them last to first always finds its way.
	sort.SliceStable(out, func(i, j int) bool {
		if di, dj := out[i].Kind == Deleted, out[j].Kind == Deleted; di != dj {
			return di
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

func isLink(e *entry) bool { return e != nil && e.stat.mode&fs.ModeSymlink != 0 }

// change diffs one update into a Change.
func (c *Capture) change(u update) (Change, error) {
	ch := Change{Path: u.path, Symlink: isLink(u.old) || isLink(u.new)}
	if u.old != nil {
		ch.Mode = u.old.stat.mode.Perm()
	}
	var old, new hunks.Snapshot
	switch {
	case u.old == nil:
		ch.Kind = Created
	case u.new == nil:
		ch.Kind = Deleted
	default:
		ch.Kind = Modified
	}
	if u.new != nil {
		new = hunks.Present(u.data)
	}
	if u.old != nil {
		data, err := c.content(u.old)
		if errors.Is(err, ErrNoContent) {
			ch.Unrevertible = fmt.Sprintf("the previous version (%d bytes) was over the %d-byte limit of kept versions", u.old.stat.size, c.maxContent)
			return ch, nil
		}
		if err != nil {
			return Change{}, fmt.Errorf("capture %s: previous version: %w", u.path, err)
		}
		old = hunks.Present(data)
	}
	if isLink(u.old) != isLink(u.new) && u.old != nil && u.new != nil {
		ch.TypeChanged, ch.Symlink = true, isLink(u.new)
	}
	edit, err := hunks.Diff(u.path, old, new)
	if err != nil {
		return Change{}, err
	}
	ch.Edit = edit
	return ch, nil
}
