package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/corral-dev/corral/internal/buildinfo"
)

// versionInfo is what version prints: the build, and the platform it was
// built for.
type versionInfo struct {
	buildinfo.Info
	Platform string `json:"platform"`
}

func runVersion(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "version", "", "Print this program's build: its version (stamped by the Makefile, else the module's), the VCS revision it was built from, and the Go toolchain.")
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	v := versionInfo{Info: buildinfo.Read(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	return e.emit(v, func(w io.Writer) error {
		rev := v.Revision
		if rev == "" {
			rev = "revision unknown"
		}
		_, err := fmt.Fprintf(w, "supervisor %s (%s) %s %s\n", v.Version, rev, v.GoVersion, v.Platform)
		return err
	})
}
