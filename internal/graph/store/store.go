// Package store keeps graph runs on disk, under <state>/graphs/<runId>/, so
// that several processes (the supervisor, MCP servers, the CLI) can drive
// one run. Every change goes through one operation, Update: take the run's
// lock, read the run fresh, apply the change, write a temporary file,
// fsync it and rename it over run.json, release. Readers never see half a
// file and no acknowledged change is lost. docs/graph.md describes the
// layout and the guarantees.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/internal/graph"
	fastjson "github.com/segmentio/encoding/json"
)

// Files in a run's folder.
const (
	runFile    = "run.json"
	eventsFile = "events.jsonl"
	lockFile   = "lock"
	nodesDir   = "nodes"
)

// DefaultLockTimeout is how long a change waits for a run's lock.
const DefaultLockTimeout = 10 * time.Second

// maxRunFile bounds run.json as read.
const maxRunFile = 64 << 20

// Options tune a Store.
type Options struct {
	// Clock is the store's time (default the system clock).
	Clock Clock
	// Process is this process as claims name it (default Self()).
	Process *Process
	// LockTimeout bounds a wait for a run's lock (default 10s).
	LockTimeout time.Duration
}

// Store is the graph runs of one state folder. It is safe for concurrent
// use, from this process and others.
type Store struct {
	root    string
	clock   Clock
	proc    *Process
	timeout time.Duration
}

// Open returns the store rooted at root (<state>/graphs), creating it.
func Open(root string, o Options) (*Store, error) {
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("graph store: %w", err)
	}
	if o.Clock == nil {
		o.Clock = SystemClock()
	}
	if o.Process == nil {
		o.Process = Self()
	}
	if o.LockTimeout <= 0 {
		o.LockTimeout = DefaultLockTimeout
	}
	return &Store{root: root, clock: o.Clock, proc: o.Process, timeout: o.LockTimeout}, nil
}

// ForState opens the store of a state folder.
func ForState(state string, o Options) (*Store, error) {
	return Open(filepath.Join(state, "graphs"), o)
}

// Process is this process as the store's claims name it.
func (s *Store) Process() *Process { return s.proc }

// Clock is the store's clock.
func (s *Store) Clock() Clock { return s.clock }

// Dir is a run's folder.
func (s *Store) Dir(id string) string { return filepath.Join(s.root, id) }

func unknownRun(id string) error {
	return graph.Errorf(graph.CodeUnknownRun, "no graph run %q", id)
}

// Create stores a new run; a run of that id already existing is run_exists.
func (s *Store) Create(ctx context.Context, r *graph.Run) error {
	if !graph.ValidRunID(r.ID) {
		return graph.Errorf(graph.CodeBadRequest, "run id %q is not valid", r.ID)
	}
	dir := s.Dir(r.ID)
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return graph.Errorf(graph.CodeRunExists, "a graph run %q exists already", r.ID)
		}
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	l, err := acquire(ctx, filepath.Join(dir, lockFile), s.proc, s.clock, s.timeout)
	if err != nil {
		return err
	}
	defer l.release()
	return s.write(r)
}

// Load reads a run as it is on disk now.
func (s *Store) Load(id string) (*graph.Run, error) {
	if !graph.ValidRunID(id) {
		return nil, unknownRun(id)
	}
	return s.load(id)
}

func (s *Store) load(id string) (*graph.Run, error) {
	f, err := os.Open(filepath.Join(s.Dir(id), runFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, unknownRun(id)
		}
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, maxRunFile+1))
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	return decodeRun(id, raw)
}

// decodeRun decodes run.json, refusing a newer format and a damaged file
// with typed errors.
func decodeRun(id string, raw []byte) (*graph.Run, error) {
	if len(raw) > maxRunFile {
		return nil, graph.Errorf(graph.CodeStoreDamaged, "run %s: run.json is larger than %d bytes", id, maxRunFile)
	}
	var head struct {
		Version int `json:"version"`
	}
	if err := fastjson.Unmarshal(raw, &head); err != nil {
		return nil, graph.Errorf(graph.CodeStoreDamaged, "run %s: run.json is damaged: %v", id, err)
	}
	if head.Version > graph.FormatVersion {
		return nil, graph.Errorf(graph.CodeStoreVersion, "run %s is in store format %d; this build reads up to %d", id, head.Version, graph.FormatVersion)
	}
	// segmentio's decoder reads a 500-node run about nine times faster
	// than encoding/json's, which graph_next and graph_status feel.
	var r graph.Run
	if err := fastjson.Unmarshal(raw, &r); err != nil {
		return nil, graph.Errorf(graph.CodeStoreDamaged, "run %s: run.json is damaged: %v", id, err)
	}
	if r.ID != id {
		return nil, graph.Errorf(graph.CodeStoreDamaged, "run %s: run.json names run %q", id, r.ID)
	}
	if err := r.Check(); err != nil {
		return nil, graph.Errorf(graph.CodeStoreDamaged, "run %s: run.json is damaged: %v", id, err)
	}
	return &r, nil
}

// Update changes a run in one operation: lock, read fresh, apply fn, write
// (temporary file, fsync, rename), release. When fn fails without having
// changed anything, nothing is written and its error returned; when it
// recorded something before failing (a superseded result), that is written
// and the error still returned. It returns the run as written.
func (s *Store) Update(ctx context.Context, id string, fn func(*graph.Run) error) (*graph.Run, error) {
	if !graph.ValidRunID(id) {
		return nil, unknownRun(id)
	}
	if _, err := os.Stat(s.Dir(id)); err != nil {
		return nil, unknownRun(id)
	}
	l, err := acquire(ctx, filepath.Join(s.Dir(id), lockFile), s.proc, s.clock, s.timeout)
	if err != nil {
		return nil, err
	}
	defer l.release()
	r, err := s.load(id)
	if err != nil {
		return nil, err
	}
	ferr := fn(r)
	if ferr != nil && !r.Dirty() {
		return r, ferr
	}
	if err := s.write(r); err != nil {
		return nil, err
	}
	return r, ferr
}

// write stamps the change and replaces run.json durably, then appends the
// change's events.
func (s *Store) write(r *graph.Run) error {
	now := s.clock.Now()
	r.Rev++
	r.UpdatedAt = now
	// The previous change's events go first if a crash kept them out of
	// the file.
	missing := r.Tail
	events := r.TakeEvents()
	for i := range events {
		r.EventSeq++
		events[i].Seq = r.EventSeq
		events[i].TS = now
	}
	r.Tail = events
	raw, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode run %s: %w", r.ID, err)
	}
	dir := s.Dir(r.ID)
	if err := atomicfile.Write(filepath.Join(dir, runFile), raw, 0o600); err != nil {
		return err
	}
	// The events follow the change they describe; run.json is the truth,
	// so they are not synced. The change is made once run.json is: an
	// append that fails (a full disk) does not undo it, and the run's tail
	// brings the events in with the next change.
	appendEvents(filepath.Join(dir, eventsFile), missing, events)
	return nil
}

// appendEvents appends a change's event lines in one write, after cutting
// a torn last line a crash left and adding whichever of the previous
// change's events (missing) the file lacks.
func appendEvents(path string, missing, events []graph.RunEvent) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	last, err := lastSeq(f)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, e := range slices.Concat(missing, events) {
		if e.Seq <= last {
			continue
		}
		line, err := json.Marshal(e)
		if err != nil {
			return err
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	if buf.Len() == 0 {
		return nil
	}
	_, err = f.Write(buf.Bytes())
	return err
}

// lastSeq returns the seq of f's last complete event line, first cutting
// an incomplete last line. It reads the file's end only, growing the
// window until the last line fits.
func lastSeq(f *os.File) (int64, error) {
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, err
	}
	size := fi.Size()
	for window := int64(4 << 10); ; window *= 4 {
		off := max(size-window, 0)
		raw, err := io.ReadAll(io.NewSectionReader(f, off, size-off))
		if err != nil {
			return 0, err
		}
		end := bytes.LastIndexByte(raw, '\n')
		if end < 0 && off > 0 && window < maxEventLine {
			continue // an incomplete line longer than the window
		}
		if end+1 < len(raw) {
			// A crash cut the last line short.
			if err := f.Truncate(off + int64(end+1)); err != nil {
				return 0, err
			}
		}
		if end < 0 {
			return 0, nil
		}
		start := bytes.LastIndexByte(raw[:end], '\n') + 1
		if start == 0 && off > 0 && window < maxEventLine {
			continue // the last line starts before the window
		}
		var e struct {
			Seq int64 `json:"seq"`
		}
		json.Unmarshal(raw[start:end], &e)
		return e.Seq, nil
	}
}

// List reads every run, most recently updated first. Runs that cannot be
// read are skipped.
func (s *Store) List() ([]*graph.Run, error) {
	des, err := os.ReadDir(s.root)
	if err != nil {
		return nil, fmt.Errorf("list graph runs: %w", err)
	}
	var runs []*graph.Run
	for _, de := range des {
		if !de.IsDir() || !graph.ValidRunID(de.Name()) {
			continue
		}
		if r, err := s.load(de.Name()); err == nil {
			runs = append(runs, r)
		}
	}
	sort.SliceStable(runs, func(i, j int) bool { return runs[i].UpdatedAt.After(runs[j].UpdatedAt) })
	return runs, nil
}

// maxEventLine bounds one graph event line as read.
const maxEventLine = 1 << 20

// EventsFrom reads a run's complete event lines from byte offset on, and
// returns them with the offset after the last one read. A torn last line
// is left for a later read.
func (s *Store) EventsFrom(id string, offset int64) ([]graph.RunEvent, int64, error) {
	if !graph.ValidRunID(id) {
		return nil, offset, unknownRun(id)
	}
	f, err := os.Open(filepath.Join(s.Dir(id), eventsFile))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(s.Dir(id)); serr != nil {
				return nil, offset, unknownRun(id)
			}
			return nil, offset, nil
		}
		return nil, offset, err
	}
	defer f.Close()
	raw, err := io.ReadAll(io.NewSectionReader(f, offset, 64<<20))
	if err != nil {
		return nil, offset, err
	}
	var out []graph.RunEvent
	for {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			break
		}
		line := raw[:i]
		raw = raw[i+1:]
		offset += int64(i + 1)
		if len(line) > maxEventLine {
			continue
		}
		var e graph.RunEvent
		if json.Unmarshal(line, &e) == nil {
			out = append(out, e)
		}
	}
	return out, offset, nil
}
