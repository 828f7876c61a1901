package supervisor

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// A session on a plugin engine runs in plugin-runner, the runner build with
// go-plugin, which the supervisor finds beside itself; the spare (a plain
// runner) is not used for it.
func TestRealPluginSessionRunsInPluginRunner(t *testing.T) {
	d := startDaemon(t)
	sup, _ := realBinaries(t)
	plugin := filepath.Join(filepath.Dir(sup), "corral-script-plugin")
	s, err := d.c.CreateSession(ctxT(t), wire.Spec{Engine: "plugin", PluginPath: plugin, Cwd: d.cwd,
		Scenario: filepath.Join(d.cwd, "scenario.json")})
	if err != nil {
		t.Fatalf("create: %v\n%s", err, d.log())
	}
	args, err := cmdline(d.runnerPID(t, s.ID))
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(args[0]) != "plugin-runner" {
		t.Fatalf("plugin session runs in %v", args)
	}
	d.command(t, s.ID, command.Send{Text: "hello"})
	evs := d.follow(t, s.ID, 1, ofType(event.TurnEnded))
	var said []string
	for _, ev := range evs {
		if ev.Type == event.AssistantText {
			said = append(said, dataOf[event.TextData](t, ev).Text)
		}
	}
	if !strings.Contains(strings.Join(said, " "), "hello from the script") {
		t.Fatalf("the plugin said %q", said)
	}
	// A built-in engine's session goes to the plain runner.
	id := d.create(t)
	if args, _ := cmdline(d.runnerPID(t, id)); len(args) == 0 || filepath.Base(args[0]) != "runner" {
		t.Fatalf("script session runs in %v", args)
	}
}
