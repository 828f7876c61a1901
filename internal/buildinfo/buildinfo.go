// Package buildinfo says which build of Corral is running: the version the
// Makefile stamps into the binaries, and what the Go toolchain recorded
// (module version, VCS revision, Go version).
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Version is set at link time by the Makefile:
//
//	-ldflags "-X github.com/corral-dev/corral/internal/buildinfo.Version=v1.2.3"
//
// Empty in a build without it (go run, go test), where the module's version
// from the build info stands in.
var Version string

// Info describes a build.
type Info struct {
	// Version is the stamped version, else the main module's version
	// ("(devel)" for a build from a work tree), else "unknown".
	Version string `json:"version"`
	// Revision is the VCS revision the binary was built from, with
	// "-dirty" when the work tree had changes; empty when unrecorded.
	Revision string `json:"revision,omitempty"`
	// GoVersion is the toolchain that built it.
	GoVersion string `json:"go"`
}

// Read returns this binary's build information.
func Read() Info {
	info := Info{Version: Version, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		if info.Version == "" {
			info.Version = "unknown"
		}
		return info
	}
	if info.Version == "" {
		info.Version = bi.Main.Version
	}
	if info.Version == "" {
		info.Version = "unknown"
	}
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && info.Revision != "" {
		info.Revision += "-dirty"
	}
	return info
}
