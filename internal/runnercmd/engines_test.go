package runnercmd

import (
	"slices"
	"testing"

	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/pkg/engine"
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

// The supervisor describes the engines from the catalog, so it must
// describe exactly the engines the runner drives, and each can be probed.
func TestCatalogMatchesBuiltin(t *testing.T) {
	var names []string
	for n, factory := range Builtin() {
		names = append(names, n)
		if _, ok := factory().(engine.Prober); !ok {
			t.Errorf("engine %s cannot be probed (engine.Prober)", n)
		}
	}
	slices.Sort(names)
	if want := catalog.Names(); !slices.Equal(names, want) {
		t.Fatalf("runnercmd.Builtin() has %v, the catalog %v", names, want)
	}
}
