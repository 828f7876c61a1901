package atomicfile

import "golang.org/x/sys/unix"

// openBeneath opens relDir beneath the folder fd in one call, the kernel
// refusing any link on the way and any way out of fd (Linux 5.6 and later;
// ENOSYS before).
func openBeneath(fd int, relDir string) (int, error) {
	return unix.Openat2(fd, relDir, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	})
}
