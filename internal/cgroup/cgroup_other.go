//go:build !linux

package cgroup

import "time"

var errNotLinux = &UnavailableError{What: "cgroup v2", Reason: "cgroups are a Linux feature"}

// SubtreeName is the name of a supervisor's subtree of leaves.
func SubtreeName(key string) string { return "corral-" + key }

// Tree is a supervisor's subtree of runners' leaves; there is none here.
type Tree struct{}

// Open fails: cgroups are a Linux feature.
func Open(string) (*Tree, error) { return nil, errNotLinux }

// Check fails: cgroups are a Linux feature.
func Check() error { return errNotLinux }

func (*Tree) Dir() string                   { return "" }
func (*Tree) SetLimits(Limits) error        { return errNotLinux }
func (*Tree) NewLeaf(string) (*Leaf, error) { return nil, errNotLinux }
func (*Tree) LeafOf(int) (*Leaf, error)     { return nil, nil }
func (*Tree) Leaves() ([]*Leaf, error)      { return nil, nil }
func (*Tree) Close() error                  { return nil }

// Remove has nothing to remove here.
func Remove(string) error { return nil }

// Leaf is one runner's cgroup; there is none here.
type Leaf struct{}

func (*Leaf) Dir() string                      { return "" }
func (*Leaf) Procs() ([]int, error)            { return nil, errNotLinux }
func (*Leaf) Sweep(time.Duration) (int, error) { return 0, nil }

// KillOthers has nothing to do here.
func KillOthers(time.Duration) (int, error) { return 0, nil }
