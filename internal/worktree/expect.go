package worktree

import (
	"fmt"
	"io/fs"
	"os"

	"github.com/corral-dev/corral/pkg/hunks"
)

// version names one content of a path: a file's blob id, or its absence.
type version struct {
	exists bool
	blob   string
}

func versionOf(s hunks.Snapshot) version {
	if !s.Exists {
		return version{}
	}
	return version{exists: true, blob: hunks.BlobID(s.Data)}
}

// is reports whether the index entry e (nil: absent) holds v.
func (v version) is(e *entry) bool {
	if e == nil {
		return !v.exists
	}
	return v.exists && e.blob == v.blob
}

// Expect announces that the file at rel (slash-separated, relative to the
// worktree) is about to become content, written by someone whose writes
// are reviewed already: an engine's edit tool after the reviewer accepted
// the edit, or the runner writing accepted hunks or taking one back out.
// Until Settle, an After that finds exactly that content takes it into the
// baseline without reporting it; any other content is reported as usual.
// Expectations of one path add up (each Settle ends one).
func (c *Capture) Expect(rel string, content hunks.Snapshot) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.expected == nil {
		c.expected = map[string][]version{}
	}
	c.expected[rel] = append(c.expected[rel], versionOf(content))
}

// Settle ends an expectation Expect announced and takes the path into the
// baseline without reporting it. written says the writer reports having
// written content. The baseline of rel becomes content when the file holds
// exactly it now, or when the writer wrote it: the next After then
// compares the file with content, so a later write by another process (a
// background job appending to the file the edit wrote) is reported as the
// difference from the edit's bytes, never as the edit again. A write that
// did not happen leaves the baseline as it was.
func (c *Capture) Settle(rel string, content hunks.Snapshot, written bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgetExpectation(rel, versionOf(content))
	return c.settleLocked(rel, content, written)
}

func (c *Capture) settleLocked(rel string, content hunks.Snapshot, written bool) error {
	v := versionOf(content)
	info, err := os.Lstat(c.abs(rel))
	switch {
	case isGone(err) || (err == nil && !tracked(info)):
		info = nil
	case err != nil:
		return fmt.Errorf("settle %s: %w", rel, err)
	}
	var now version
	if info != nil {
		data, err := readContent(c.abs(rel), info)
		if err != nil && !isGone(err) {
			return fmt.Errorf("settle %s: %w", rel, err)
		}
		if err == nil {
			now = versionOf(hunks.Present(data))
		}
	}
	switch {
	case now == v:
		// The file holds the content: the stat read before it is the
		// content's (a write since then moves it, and is read again).
		return c.adopt(rel, content, info, false)
	case !written:
		return nil
	default:
		// Something else wrote after the writer: the baseline is the
		// writer's content, and the file is read again at the next scan.
		return c.adopt(rel, content, info, true)
	}
}

// Write runs write, which puts content at rel (slash-separated, relative
// to the worktree) as a writer whose writes are reviewed already would
// (the runner writing accepted hunks, or taking one back out), with no
// scan in between: neither the file nor a temporary file the write makes
// beside it is ever reported. The result is taken into the baseline as
// Settle does; write's error is returned.
func (c *Capture) Write(rel string, content hunks.Snapshot, write func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	err := write()
	if serr := c.settleLocked(rel, content, err == nil); err == nil {
		err = serr
	}
	return err
}

// forgetExpectation drops one expectation of v at rel.
func (c *Capture) forgetExpectation(rel string, v version) {
	vs := c.expected[rel]
	for i, e := range vs {
		if e == v {
			vs = append(vs[:i], vs[i+1:]...)
			break
		}
	}
	if len(vs) == 0 {
		delete(c.expected, rel)
	} else {
		c.expected[rel] = vs
	}
}

// adopt makes content the baseline of rel. info is the file's stat (nil
// when absent); stale says the file may hold something else, so its stat
// is not kept and the next scan reads it again whatever inotify says.
func (c *Capture) adopt(rel string, content hunks.Snapshot, info fs.FileInfo, stale bool) error {
	if stale {
		if c.stale == nil {
			c.stale = map[string]bool{}
		}
		c.stale[rel] = true
	}
	if !content.Exists {
		delete(c.index, rel)
		return nil
	}
	e := &entry{blob: hunks.BlobID(content.Data)}
	switch {
	case info == nil:
		e.stat.mode = 0o644
	case stale:
		e.stat.mode = info.Mode() // a deletion later puts the bits back
	default:
		e.stat = keyOf(info)
	}
	switch {
	case c.git.has(e.blob):
		e.kept = true
	case int64(len(content.Data)) <= c.maxContent:
		if _, err := c.store.Put(content.Data); err != nil {
			return err
		}
		e.kept = true
	}
	c.index[rel] = e
	return nil
}

// unexpected drops from ups the updates that reached a version Expect
// announced: they are in the index, not news.
func (c *Capture) unexpected(ups []update) []update {
	if len(c.expected) == 0 {
		return ups
	}
	out := ups[:0]
	for _, u := range ups {
		if !c.isExpected(u) {
			out = append(out, u)
		}
	}
	return out
}

func (c *Capture) isExpected(u update) bool {
	for _, v := range c.expected[u.path] {
		if v.is(u.new) {
			return true
		}
	}
	return false
}
