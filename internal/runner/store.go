package runner

import (
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/corral-dev/corral/internal/eventlog"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// store is the session folder as the runner writes it: the event log and
// meta.json. Every event the runner records goes through emit and every
// change of the spec through saveSpec, so this is the one place that
// decides what a failed write means: the log's Failed callback tells the
// runner (storage.go), which stops the session until the storage takes
// writes again, and record hands the error to the callers that must not
// acknowledge what is not in the file. A fork moves the store to the new
// session's folder.
type store struct {
	log *zap.Logger
	// written is handed every batch of event lines once it is in the
	// file (Options.Mirror); nil when nobody mirrors.
	written func(eventlog.Batch)
	// failed is told each time the log enters its failed state.
	failed func(*eventlog.StorageError)

	// events and dir change together, and only in a fork, which no other
	// command runs beside (Runner.cmds); readers take either at any time.
	events atomic.Pointer[eventlog.Log]
	dir    atomic.Pointer[string]

	mu sync.Mutex
	// specWritten is closed once the background write of meta.json that
	// Start began is done; saveSpec waits for it, so an older spec never
	// lands on a newer one.
	specWritten chan struct{}
}

// openStore opens the event log of the session folder dir.
func openStore(dir string, written func(eventlog.Batch), failed func(*eventlog.StorageError), log *zap.Logger) (*store, error) {
	s := &store{log: log, written: written, failed: failed, specWritten: closedChan()}
	events, err := eventlog.Open(filepath.Join(dir, EventsFile), eventlog.Options{Written: written, Failed: failed})
	if err != nil {
		return nil, err
	}
	s.events.Store(events)
	s.dir.Store(&dir)
	return s, nil
}

func closedChan() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// Dir is the session folder.
func (s *store) Dir() string { return *s.dir.Load() }

// eventLog is the session's event log.
func (s *store) eventLog() *eventlog.Log { return s.events.Load() }

func (s *store) eventsPath() string { return filepath.Join(s.Dir(), EventsFile) }

// emit appends an event, logging (not returning) a failure: the runner
// learns of a failed storage through the log's Failed callback, and a
// caller that must not acknowledge an event that is not in the file uses
// record.
func (s *store) emit(typ event.Type, data any) {
	if err := s.record(typ, data); err != nil && !errors.Is(err, eventlog.ErrUnavailable) {
		s.log.Error("append event", zap.String("type", string(typ)), zap.Error(err))
	}
}

// record appends an event and returns why it is not in the file, if it is
// not: a *eventlog.StorageError (the session is storageFailed) becomes
// storage_unavailable.
func (s *store) record(typ event.Type, data any) error {
	_, err := s.eventLog().Append(typ, data)
	if err != nil {
		s.log.Debug("append event", zap.String("type", string(typ)), zap.Error(err))
		if errors.Is(err, eventlog.ErrUnavailable) {
			return wire.Errorf(wire.CodeStorageUnavailable, "%s not recorded: %v", typ, err)
		}
	}
	return err
}

// saveSpec replaces meta.json, after the write Start began.
func (s *store) saveSpec(spec wire.Spec) error {
	s.waitSpecWritten()
	return WriteSpec(s.Dir(), spec)
}

// saveSpecInBackground begins a durable write of meta.json and returns at
// once; saveSpec and waitSpecWritten wait for it.
func (s *store) saveSpecInBackground(spec wire.Spec) {
	done := make(chan struct{})
	s.mu.Lock()
	s.specWritten = done
	s.mu.Unlock()
	dir := s.Dir()
	go func() {
		defer close(done)
		if err := WriteSpec(dir, spec); err != nil {
			s.log.Warn("store engine session id", zap.Error(err))
		}
	}()
}

// waitSpecWritten waits for the background write of meta.json.
func (s *store) waitSpecWritten() {
	s.mu.Lock()
	done := s.specWritten
	s.mu.Unlock()
	<-done
}

// moveTo continues the session in folder dir, which already holds a copy
// of the event log: new events go there, and the old log is closed.
func (s *store) moveTo(dir string) error {
	next, err := eventlog.Open(filepath.Join(dir, EventsFile), eventlog.Options{Written: s.written, Failed: s.failed})
	if err != nil {
		return err
	}
	old := s.events.Swap(next)
	s.dir.Store(&dir)
	if err := old.Close(); err != nil {
		s.log.Warn("close the forked-from log", zap.Error(err))
	}
	return nil
}

// close waits for the background write of meta.json and closes the log.
func (s *store) close() error {
	s.waitSpecWritten()
	return s.eventLog().Close()
}
