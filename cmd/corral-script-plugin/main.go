// Command corral-script-plugin serves Corral's built-in script engine as an
// engine plugin. It is the worked example of docs/engines-plugin.md: a
// plugin binary is an engine.Factory handed to plugin.Serve.
//
// Build and install it where a runner finds plugins by name:
//
//	go build -o "$CORRAL_PLUGINS_DIR/corral-script-plugin" ./cmd/corral-script-plugin
//
// Run by hand it only says it is a plugin: a runner starts it.
package main

import (
	"github.com/corral-dev/corral/internal/engines/script"
	"github.com/corral-dev/corral/pkg/engine/plugin"
)

func main() {
	plugin.Serve(script.New)
}
