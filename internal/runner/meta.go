package runner

import (
	"os"

	"github.com/corral-dev/corral/internal/sessiondir"
	"github.com/corral-dev/corral/pkg/wire"
)

// Files in a session folder.
const (
	MetaFile     = sessiondir.MetaFile
	EventsFile   = sessiondir.EventsFile
	ControlSock  = sessiondir.ControlSock
	PresenceFile = sessiondir.PresenceFile
	PidFile      = sessiondir.PidFile
	RunnerSock   = sessiondir.RunnerSock
)

// ReadSpec reads a session folder's meta.json; ok is false when it has none.
func ReadSpec(dir string) (wire.Spec, bool, error) { return sessiondir.ReadSpec(dir) }

// WriteSpec replaces a session folder's meta.json atomically.
func WriteSpec(dir string, spec wire.Spec) error { return sessiondir.WriteSpec(dir, spec) }

func writeAtomic(path string, data []byte, perm os.FileMode) error {
	return sessiondir.WriteAtomic(path, data, perm)
}
