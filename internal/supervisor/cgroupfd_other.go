//go:build !linux

package supervisor

import (
	"errors"
	"io"
	"os/exec"

	"github.com/corral-dev/corral/internal/cgroup"
)

func placeIn(*exec.Cmd, *cgroup.Leaf) (io.Closer, error) {
	return nil, errors.New("cgroups are a Linux feature")
}
