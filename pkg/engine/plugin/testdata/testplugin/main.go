// Command testplugin is a misbehaving engine plugin for the plugin
// package's tests. TESTPLUGIN_MODE picks how it misbehaves:
//
//	cookie   expects another magic cookie (a plugin built for another host)
//	version  speaks engine protocol 2
//	garbage  prints a line that is not a handshake and exits
//	panic    panics in the middle of a turn, after writing to stderr
//	hang     ignores cancellation: its turns never end
package main

import (
	"context"
	"fmt"
	"os"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/corral-dev/corral/pkg/engine"
	"github.com/corral-dev/corral/pkg/engine/plugin"
	"github.com/corral-dev/corral/pkg/event"
)

func main() {
	switch mode := os.Getenv("TESTPLUGIN_MODE"); mode {
	case "cookie", "version":
		hs := plugin.Handshake()
		if mode == "cookie" {
			hs.MagicCookieValue = "another-host"
		} else {
			hs.ProtocolVersion = 2
		}
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]goplugin.PluginSet{int(hs.ProtocolVersion): {}},
		})
	case "garbage":
		fmt.Println("hello, I am not a plugin")
	case "panic", "hang":
		plugin.Serve(func() engine.Engine { return &misbehaving{mode: mode} })
	default:
		fmt.Fprintf(os.Stderr, "testplugin: unknown TESTPLUGIN_MODE %q\n", mode)
		os.Exit(2)
	}
}

type misbehaving struct {
	mode string
	host engine.Host
}

func (m *misbehaving) Start(_ context.Context, opts engine.StartOptions) (string, error) {
	m.host = opts.Host
	return "misbehaving-" + opts.SessionID, nil
}

func (m *misbehaving) Turn(context.Context, engine.TurnInput) (engine.TurnResult, error) {
	m.host.Emit(event.AssistantDelta, event.TextData{Text: "about to " + m.mode})
	fmt.Fprintln(os.Stderr, "testplugin: the turn goes wrong now")
	if m.mode == "panic" {
		panic("testplugin: deliberate panic mid-turn")
	}
	select {}
}

func (m *misbehaving) Interrupt(context.Context) error { return nil }
func (m *misbehaving) Close() error                    { return nil }
