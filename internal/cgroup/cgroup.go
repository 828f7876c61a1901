// Package cgroup gives each runner a cgroup (v2) of its own: a leaf, in a
// subtree of the supervisor's own cgroup, that the runner is started into
// atomically (clone3 with CLONE_INTO_CGROUP), so that everything it starts
// is in the leaf too, whatever process group or session it moves to. When
// the runner ends, Leaf.Sweep kills what is left in the leaf, waits for it
// to empty and removes it; optional limits (memory.max, pids.max,
// cpu.weight) are written to every leaf.
//
// Where cgroups cannot be used (not Linux, no cgroup2 mount, a cgroup this
// process may not write), Open says why, and the caller falls back to
// process groups (Mode).
package cgroup

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Mode says whether a supervisor uses cgroups (serve --cgroups).
type Mode string

const (
	// Auto uses cgroups where the system allows it, else process groups.
	Auto Mode = "auto"
	// Off never uses cgroups.
	Off Mode = "off"
	// Required refuses to start without them (and without the limits
	// asked for).
	Required Mode = "required"
)

// ParseMode reads auto, off or required.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case Auto, Off, Required:
		return m, nil
	}
	return "", fmt.Errorf("cgroups mode %q: want auto, off or required", s)
}

// String implements flag.Value.
func (m *Mode) String() string { return string(*m) }

// Set implements flag.Value.
func (m *Mode) Set(s string) error {
	v, err := ParseMode(s)
	if err != nil {
		return err
	}
	*m = v
	return nil
}

// Limits are what each runner's leaf may use; zero fields set nothing.
type Limits struct {
	// MemoryMax is memory.max in bytes: past it the kernel reclaims, then
	// kills a process of the leaf (the OOM killer).
	MemoryMax int64
	// PidsMax is pids.max: how many processes and threads the leaf may
	// hold at once; fork fails with EAGAIN past it.
	PidsMax int64
	// CPUWeight is cpu.weight (1–10000, 100 being everyone's default):
	// the leaf's share of the CPU when the CPU is contended.
	CPUWeight int64
}

// Controllers returns the controllers the limits need, in the order the
// kernel lists them.
func (l Limits) Controllers() []string {
	var c []string
	if l.CPUWeight != 0 {
		c = append(c, "cpu")
	}
	if l.MemoryMax != 0 {
		c = append(c, "memory")
	}
	if l.PidsMax != 0 {
		c = append(c, "pids")
	}
	return c
}

// Check reports limits out of range.
func (l Limits) Check() error {
	switch {
	case l.MemoryMax < 0:
		return errors.New("memory limit must be positive")
	case l.PidsMax < 0:
		return errors.New("pids limit must be positive")
	case l.CPUWeight < 0 || l.CPUWeight > 10000:
		return errors.New("cpu weight must be between 1 and 10000")
	}
	return nil
}

// files returns the interface files and values the limits write.
func (l Limits) files() [][2]string {
	var f [][2]string
	if l.CPUWeight != 0 {
		f = append(f, [2]string{"cpu.weight", strconv.FormatInt(l.CPUWeight, 10)})
	}
	if l.MemoryMax != 0 {
		f = append(f, [2]string{"memory.max", strconv.FormatInt(l.MemoryMax, 10)})
	}
	if l.PidsMax != 0 {
		f = append(f, [2]string{"pids.max", strconv.FormatInt(l.PidsMax, 10)})
	}
	return f
}

// ParseBytes reads a size in bytes, with an optional binary suffix K, M, G
// or T (KiB…, case-insensitive, an optional trailing "i" or "iB"):
// 512M, 2G, 1073741824.
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "B"), "I")
	shift := 0
	if n := len(t); n > 0 {
		switch t[n-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift > 0 {
			t = t[:n-1]
		}
	}
	v, err := strconv.ParseInt(t, 10, 64)
	if err != nil || v <= 0 {
		return 0, fmt.Errorf("size %q: want a positive number of bytes, with an optional K, M, G or T", s)
	}
	if v > (1<<63-1)>>shift {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return v << shift, nil
}

// UnavailableError says why cgroups, or the controllers limits need,
// cannot be used here.
type UnavailableError struct {
	What   string // "cgroup v2", or "the memory controller"...
	Reason string
}

func (e *UnavailableError) Error() string { return e.What + " unavailable: " + e.Reason }

// ErrUnavailable matches every UnavailableError (errors.Is).
var ErrUnavailable = errors.New("unavailable")

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }
