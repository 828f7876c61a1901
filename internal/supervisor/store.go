package supervisor

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/corral-dev/corral/internal/sessiondir"

	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// Files of a session folder.
const (
	metaFile     = sessiondir.MetaFile
	eventsFile   = sessiondir.EventsFile
	presenceFile = sessiondir.PresenceFile
	pidFile      = sessiondir.PidFile
)

func validID(id string) bool { return sessiondir.ValidID(id) }

func notFound(id string) error {
	return wire.Errorf(wire.CodeNotFound, "session %s not found", id)
}

// createFolder makes a new session folder holding spec as meta.json and
// returns the spec with its id.
func createFolder(sessions string, spec wire.Spec) (wire.Spec, error) {
	spec, _, err := sessiondir.Create(sessions, spec)
	return spec, err
}

func readSpec(dir, id string) (wire.Spec, error) {
	spec, ok, err := sessiondir.ReadSpec(dir)
	if err != nil {
		return spec, fmt.Errorf("session %s: %w", id, err)
	}
	if !ok {
		return spec, notFound(id)
	}
	if spec.ID == "" {
		spec.ID = id
	}
	return spec, nil
}

// readPresence returns the status the runner last left in presence.json,
// or nil when there is none.
func readPresence(dir string) (*command.Status, error) {
	raw, err := os.ReadFile(filepath.Join(dir, presenceFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st command.Status
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", presenceFile, err)
	}
	return &st, nil
}

// validateSpec checks a spec a client sent to create a session.
func validateSpec(spec wire.Spec) error {
	switch {
	case spec.ID != "":
		return wire.Errorf(wire.CodeBadRequest, "id is assigned by the supervisor; leave it out")
	case spec.Engine == "":
		return wire.Errorf(wire.CodeBadRequest, "engine is required (for example \"script\")")
	case spec.SpendCapUSD < 0:
		return wire.Errorf(wire.CodeBadRequest, "spendCapUsd must not be negative")
	case spec.Parent != "" && !validID(spec.Parent):
		return wire.Errorf(wire.CodeBadRequest, "parent %q is not a session id", spec.Parent)
	case spec.Placement != nil:
		return wire.Errorf(wire.CodeBadRequest, "placement chooses a node of a fleet, and this supervisor is in none (serve --nats)")
	}
	if spec.Cwd != "" {
		if !filepath.IsAbs(spec.Cwd) {
			return wire.Errorf(wire.CodeBadRequest, "cwd %q must be an absolute path", spec.Cwd)
		}
		fi, err := os.Stat(spec.Cwd)
		if err != nil || !fi.IsDir() {
			return wire.Errorf(wire.CodeBadRequest, "cwd %q is not a directory", spec.Cwd)
		}
	}
	if err := spec.Check(); err != nil {
		return err
	}
	if spec.PluginPath != "" && !filepath.IsAbs(spec.PluginPath) {
		return wire.Errorf(wire.CodeBadRequest, "pluginPath %q must be an absolute path", spec.PluginPath)
	}
	return catalog.Check(spec.Engine, spec.EngineConfig)
}
