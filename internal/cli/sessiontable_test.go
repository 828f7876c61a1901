package cli

import (
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

func TestSessionTableShowsTheState(t *testing.T) {
	for _, c := range []struct {
		name   string
		status *command.Status
		want   string
	}{
		{"no status", nil, " - "},
		{"idle", &command.Status{State: wire.StateIdle}, " idle "},
		{"held by the spend cap", &command.Status{State: wire.StateStopped, Held: true}, " stopped (spend cap reached) "},
		{"storage failed", &command.Status{State: wire.StateStorageFailed}, " storageFailed "},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			s := api.Session{ID: "3f2a9c0d1e4b", Spec: wire.Spec{Engine: "script"}, Live: true, Status: c.status}
			if err := sessionTable(&out, []api.Session{s}); err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if len(lines) != 2 || !strings.Contains(lines[1], c.want) {
				t.Fatalf("table:\n%s\nwant a row holding %q", out.String(), c.want)
			}
		})
	}
}
