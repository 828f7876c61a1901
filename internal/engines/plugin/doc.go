// Package plugin is the runner's "plugin" engine: it finds an engine plugin
// binary from the session's configuration and drives it through
// pkg/engine/plugin.
//
// The binary is the session's explicit path (Config["pluginPath"], from the
// session spec's pluginPath) or, by name, Config["plugin"] in the plugins
// folder (Config["pluginsDir"], default $CORRAL_PLUGINS_DIR).
package plugin
