package runnercmd

import (
	"slices"
	"testing"

	"github.com/corral-dev/corral/pkg/wire"
)

// The supervisor picks the runner build from wire's list, so it must name
// exactly the engines Builtin gives.
func TestBuiltinMatchesWire(t *testing.T) {
	var names []string
	for n := range Builtin() {
		names = append(names, n)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(wire.BuiltinEngines()))
	if !slices.Equal(names, want) {
		t.Fatalf("runnercmd.Builtin() has %v, wire.BuiltinEngines() %v", names, want)
	}
}
