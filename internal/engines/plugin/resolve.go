package plugin

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Config keys of the plugin engine.
const (
	// KeyPluginPath is the absolute path of the plugin binary.
	KeyPluginPath = "pluginPath"
	// KeyPlugin names a plugin in the plugins folder.
	KeyPlugin = "plugin"
	// KeyPluginsDir is the plugins folder; it defaults to
	// $CORRAL_PLUGINS_DIR.
	KeyPluginsDir = "pluginsDir"
)

// EnvPluginsDir names the environment variable giving the default plugins
// folder.
const EnvPluginsDir = "CORRAL_PLUGINS_DIR"

// maxNameLen bounds a plugin name (a file name).
const maxNameLen = 255

// Resolve finds the plugin binary config names: config[KeyPluginPath], or
// config[KeyPlugin] in the plugins folder (config[KeyPluginsDir], else
// getenv(EnvPluginsDir)). It returns an absolute path to an executable
// regular file.
func Resolve(config map[string]string, getenv func(string) string) (string, error) {
	path, name := config[KeyPluginPath], config[KeyPlugin]
	switch {
	case path != "" && name != "":
		return "", fmt.Errorf("both %s and %s are set; a session names its plugin one way", KeyPluginPath, KeyPlugin)
	case path != "":
		if !filepath.IsAbs(path) {
			return "", fmt.Errorf("%s %q is not an absolute path", KeyPluginPath, path)
		}
		path = filepath.Clean(path)
		if err := executable(path); err != nil {
			return "", fmt.Errorf("plugin %s: %w", path, err)
		}
		return path, nil
	case name != "":
		if err := ValidName(name); err != nil {
			return "", err
		}
		dir := config[KeyPluginsDir]
		if dir == "" {
			dir = getenv(EnvPluginsDir)
		}
		if dir == "" {
			return "", fmt.Errorf("plugin %q: no plugins folder; set %s or %s", name, KeyPluginsDir, EnvPluginsDir)
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", fmt.Errorf("plugins folder %s: %w", dir, err)
		}
		path = filepath.Join(abs, name)
		if err := executable(path); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("plugin %q is not installed in %s", name, abs)
			}
			return "", fmt.Errorf("plugin %s: %w", path, err)
		}
		return path, nil
	}
	return "", fmt.Errorf("no plugin named: set %s (an absolute path) or %s (a name in the plugins folder)", KeyPluginPath, KeyPlugin)
}

// ValidName checks a plugin name: a plain file name, so a name cannot
// reach outside the plugins folder.
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("plugin name is empty")
	case len(name) > maxNameLen:
		return fmt.Errorf("plugin name is %d bytes, over %d", len(name), maxNameLen)
	case name == "." || name == "..":
		return fmt.Errorf("plugin name %q is not a file name", name)
	case strings.ContainsAny(name, "/\\\x00"):
		return fmt.Errorf("plugin name %q must be a file name in the plugins folder, not a path", name)
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("plugin name %q must not start with '-'", name)
	}
	return nil
}

// executable checks that path is a regular file someone may execute.
func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	if fi.Mode().Perm()&0o111 == 0 {
		return errors.New("not executable")
	}
	return nil
}
