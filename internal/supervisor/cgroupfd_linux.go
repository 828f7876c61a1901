package supervisor

import (
	"io"
	"os/exec"
	"syscall"

	"github.com/corral-dev/corral/internal/cgroup"
)

// placeIn has cmd's process start in leaf, atomically (clone3 with
// CLONE_INTO_CGROUP): nothing it starts can be outside the leaf. The
// returned closer is for after cmd.Start.
func placeIn(cmd *exec.Cmd, leaf *cgroup.Leaf) (io.Closer, error) {
	f, err := leaf.Open()
	if err != nil {
		return nil, err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.UseCgroupFD = true
	cmd.SysProcAttr.CgroupFD = int(f.Fd())
	return f, nil
}
