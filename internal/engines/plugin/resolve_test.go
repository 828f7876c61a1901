package plugin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "myengine")
	if err := os.WriteFile(plugin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	envDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(envDir, "fromenv"), []byte("#!/bin/sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	getenv := func(name string) string {
		if name == EnvPluginsDir {
			return envDir
		}
		return ""
	}
	noenv := func(string) string { return "" }

	cases := []struct {
		name    string
		config  map[string]string
		getenv  func(string) string
		want    string
		wantErr string
	}{
		{"explicit path", map[string]string{KeyPluginPath: plugin}, noenv, plugin, ""},
		{"explicit path is cleaned", map[string]string{KeyPluginPath: dir + "/./myengine"}, noenv, plugin, ""},
		{"relative path", map[string]string{KeyPluginPath: "bin/myengine"}, noenv, "", "not an absolute path"},
		{"missing path", map[string]string{KeyPluginPath: filepath.Join(dir, "absent")}, noenv, "", "no such file"},
		{"not executable", map[string]string{KeyPluginPath: plain}, noenv, "", "not executable"},
		{"a folder", map[string]string{KeyPluginPath: dir}, noenv, "", "not a regular file"},
		{"name in the configured folder", map[string]string{KeyPlugin: "myengine", KeyPluginsDir: dir}, getenv, plugin, ""},
		{"name in the environment's folder", map[string]string{KeyPlugin: "fromenv"}, getenv, filepath.Join(envDir, "fromenv"), ""},
		{"name not installed", map[string]string{KeyPlugin: "other", KeyPluginsDir: dir}, noenv, "", `plugin "other" is not installed in ` + dir},
		{"name without a folder", map[string]string{KeyPlugin: "myengine"}, noenv, "", "no plugins folder"},
		{"name that is a path", map[string]string{KeyPlugin: "../myengine", KeyPluginsDir: dir}, noenv, "", "not a path"},
		{"both path and name", map[string]string{KeyPluginPath: plugin, KeyPlugin: "myengine"}, noenv, "", "both"},
		{"neither", map[string]string{}, getenv, "", "no plugin named"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(c.config, c.getenv)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("Resolve = %q, %v; want an error saying %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("Resolve = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestValidName(t *testing.T) {
	for _, name := range []string{"", ".", "..", "a/b", `a\b`, "/abs", "-flag", "nul\x00", strings.Repeat("n", maxNameLen+1)} {
		if err := ValidName(name); err == nil {
			t.Errorf("ValidName(%q) accepted it", name)
		}
	}
	for _, name := range []string{"corral-script-plugin", "my.engine", "..hidden", "v2"} {
		if err := ValidName(name); err != nil {
			t.Errorf("ValidName(%q): %v", name, err)
		}
	}
}

// FuzzResolveName checks that a name ValidName accepts stays a file in the
// plugins folder, and that Resolve answers any name with a path there or an
// error, never a panic.
func FuzzResolveName(f *testing.F) {
	for _, seed := range []string{"engine", "../engine", "a/../../b", ".", "x\x00y", "-rf"} {
		f.Add(seed)
	}
	dir := f.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "engine"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if ValidName(name) == nil {
			p := filepath.Join(dir, name)
			if filepath.Dir(p) != dir || filepath.Base(p) != name {
				t.Fatalf("valid name %q joins to %s, not a file in %s", name, p, dir)
			}
		}
		got, err := Resolve(map[string]string{KeyPlugin: name, KeyPluginsDir: dir}, func(string) string { return "" })
		if err == nil && filepath.Dir(got) != dir {
			t.Fatalf("name %q resolved to %s, outside %s", name, got, dir)
		}
	})
}
