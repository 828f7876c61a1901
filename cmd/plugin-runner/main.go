// Command plugin-runner is the runner with plugin engines (hashicorp/
// go-plugin) as well as the built-in ones. The supervisor starts it for a
// session whose engine is not built in; it is a separate binary because
// go-plugin's packages would otherwise add start-up time and memory to every
// session. Flags and modes are runner's (internal/runnercmd).
package main

import (
	"os"

	pluginengine "github.com/corral-dev/corral/internal/engines/plugin"
	"github.com/corral-dev/corral/internal/runnercmd"
)

func main() {
	engines := runnercmd.Builtin()
	engines["plugin"] = pluginengine.New
	os.Exit(runnercmd.Main("plugin-runner", os.Args[1:], engines))
}
