package codex

import (
	"testing"

	"github.com/corral-dev/corral/internal/engines/catalog/catalogtest"
)

// The settings this engine reads are the ones the catalog declares, which
// the supervisor checks a spec's engineConfig against.
func TestSettingsAreDeclared(t *testing.T) {
	catalogtest.CheckDeclared(t, "codex", true, catalogtest.Keys(t, ".", "Key"))
}
