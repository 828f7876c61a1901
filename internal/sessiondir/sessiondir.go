// Package sessiondir is the layout of a session folder, shared by the
// supervisor that creates it and the runner that owns it:
//
//	<state>/sessions/<id>/
//	  meta.json      the session's wire.Spec, replaced atomically
//	  events.jsonl   the append-only event log
//	  control.sock   the runner's command socket (0600)
//	  presence.json  the session's state for status bars, replaced atomically
//	  runner.pid     the live runner's pid
//	  engine/        the engine's own state (CLI homes, transcripts)
package sessiondir

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/pkg/wire"
)

// Files in a session folder.
const (
	MetaFile     = "meta.json"
	EventsFile   = "events.jsonl"
	ControlSock  = "control.sock"
	PresenceFile = "presence.json"
	PidFile      = "runner.pid"
	// RunnerSock is where a live runner started by a supervisor waits
	// for the next supervisor to re-attach when its own goes away.
	RunnerSock = "runner.sock"
	EngineDir  = "engine"
)

// idLen is the length of a session id in hex digits.
const idLen = 12

// NewID returns a fresh random session id.
func NewID() (string, error) {
	var b [idLen / 2]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("session id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// ValidID accepts ids that are safe as one path element.
func ValidID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}

// Create makes a new session folder under sessions with a fresh id and
// spec as its meta.json, and returns the spec with its id and the folder.
func Create(sessions string, spec wire.Spec) (wire.Spec, string, error) {
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		return spec, "", fmt.Errorf("create sessions folder: %w", err)
	}
	for range 8 {
		id, err := NewID()
		if err != nil {
			return spec, "", err
		}
		dir := filepath.Join(sessions, id)
		if err := os.Mkdir(dir, 0o700); errors.Is(err, os.ErrExist) {
			continue
		} else if err != nil {
			return spec, "", fmt.Errorf("create session folder: %w", err)
		}
		spec.ID = id
		// Not synced: the runner stores the spec durably as the session
		// opens (with its engine's conversation id), before any turn.
		// A session whose start fails is removed.
		raw, err := encodeSpec(spec)
		if err == nil {
			err = atomicfile.WriteNoSync(filepath.Join(dir, MetaFile), raw, 0o600)
		}
		if err != nil {
			os.RemoveAll(dir)
			return spec, "", err
		}
		return spec, dir, nil
	}
	return spec, "", errors.New("create session folder: no free id after 8 tries")
}

// ReservedFile marks a session folder reserved for a session not yet
// created (Reserve): it holds no meta.json, so no listing shows it.
const ReservedFile = "reserved"

// Reserve makes a folder under sessions with a fresh id for a session to
// be created later (CreateReserved), so that its engine can be started
// ahead in it; the folder holds ReservedFile, whose content is owner, and
// no meta.json.
func Reserve(sessions, owner string) (id, dir string, err error) {
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		return "", "", fmt.Errorf("create sessions folder: %w", err)
	}
	for range 8 {
		if id, err = NewID(); err != nil {
			return "", "", err
		}
		dir = filepath.Join(sessions, id)
		if err := os.Mkdir(dir, 0o700); errors.Is(err, os.ErrExist) {
			continue
		} else if err != nil {
			return "", "", fmt.Errorf("reserve session folder: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, ReservedFile), []byte(owner), 0o600); err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("reserve session folder: %w", err)
		}
		return id, dir, nil
	}
	return "", "", errors.New("reserve session folder: no free id after 8 tries")
}

// CreateReserved makes the folder Reserve made for id the session of spec,
// as Create makes a new one, and returns the spec with its id.
func CreateReserved(sessions, id string, spec wire.Spec) (wire.Spec, error) {
	dir := filepath.Join(sessions, id)
	if _, err := os.Stat(filepath.Join(dir, ReservedFile)); err != nil {
		return spec, fmt.Errorf("session folder %s is not reserved: %w", id, err)
	}
	spec.ID = id
	raw, err := encodeSpec(spec)
	if err == nil {
		err = atomicfile.WriteNoSync(filepath.Join(dir, MetaFile), raw, 0o600)
	}
	if err == nil {
		err = os.Remove(filepath.Join(dir, ReservedFile))
	}
	if err != nil {
		return spec, fmt.Errorf("create reserved session folder: %w", err)
	}
	return spec, nil
}

// IsReserved says whether dir is a folder Reserve made that no session
// took, and for which owner.
func IsReserved(dir string) (owner string, ok bool) {
	raw, err := os.ReadFile(filepath.Join(dir, ReservedFile))
	if err != nil {
		return "", false
	}
	_, err = os.Stat(filepath.Join(dir, MetaFile))
	return string(raw), errors.Is(err, os.ErrNotExist)
}

// ReadSpec reads a session folder's meta.json; ok is false when it has none.
func ReadSpec(dir string) (spec wire.Spec, ok bool, err error) {
	raw, err := os.ReadFile(filepath.Join(dir, MetaFile))
	if errors.Is(err, os.ErrNotExist) {
		return spec, false, nil
	}
	if err != nil {
		return spec, false, fmt.Errorf("read session meta: %w", err)
	}
	if err := json.Unmarshal(raw, &spec); err != nil {
		return spec, false, fmt.Errorf("read session meta %s: %w", filepath.Join(dir, MetaFile), err)
	}
	return spec, true, nil
}

// WriteSpec replaces a session folder's meta.json atomically, unless it
// already holds spec: a runner opening a session the supervisor just
// created would otherwise pay for a second durable write of the same bytes.
func WriteSpec(dir string, spec wire.Spec) error {
	raw, err := encodeSpec(spec)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, MetaFile)
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, raw) {
		return nil
	}
	return WriteAtomic(path, raw, 0o600)
}

func encodeSpec(spec wire.Spec) ([]byte, error) {
	raw, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode session meta: %w", err)
	}
	return append(raw, '\n'), nil
}

// WriteAtomic replaces path with data atomically and durably.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	return atomicfile.Write(path, data, perm)
}
