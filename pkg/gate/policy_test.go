package gate

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeSettings(t *testing.T, worktree, content string) {
	t.Helper()
	dir := filepath.Join(worktree, ".corral")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPolicyLayers(t *testing.T) {
	cases := []struct {
		name     string
		settings string // "" for no file
		session  *Policy
		check    func(t *testing.T, p Policy)
	}{
		{
			name: "defaults without a settings file",
			check: func(t *testing.T, p Policy) {
				if p.Mode != ModeReview || !slices.Equal(p.Allow, DefaultPolicy().Allow) {
					t.Errorf("got mode %q and %d patterns, want the defaults", p.Mode, len(p.Allow))
				}
			},
		},
		{
			name:     "settings without a gate object",
			settings: `{"engine": {"name": "script"}}`,
			check: func(t *testing.T, p Policy) {
				if len(p.Allow) != len(DefaultPolicy().Allow) {
					t.Errorf("got %d patterns, want the defaults", len(p.Allow))
				}
			},
		},
		{
			name:     "project adds patterns and narrows",
			settings: `{"gate": {"mode": "readonly", "allow": ["go test *"], "deny": ["npm publish *"]}}`,
			check: func(t *testing.T, p Policy) {
				if p.Mode != ModeReadonly || !slices.Contains(p.Allow, "go test *") || !slices.Contains(p.Allow, "ls *") || !slices.Equal(p.Deny, []string{"npm publish *"}) {
					t.Errorf("got %+v", p)
				}
			},
		},
		{
			name:     "session overrides the project's mode and adds its own",
			settings: `{"gate": {"mode": "readonly", "allow": ["go test *"]}}`,
			session:  &Policy{Mode: ModeAuto, Allow: []string{"make test", "go test *"}, AllowNetwork: true, Unattended: true, WebHosts: []string{"pkg.go.dev"}},
			check: func(t *testing.T, p Policy) {
				if p.Mode != ModeAuto || !p.AllowNetwork || !p.Unattended || !slices.Equal(p.WebHosts, []string{"pkg.go.dev"}) {
					t.Errorf("got %+v", p)
				}
				if n := strings.Count(strings.Join(p.Allow, "\n"), "go test *"); n != 1 {
					t.Errorf("pattern listed %d times, want once", n)
				}
				if !slices.Contains(p.Allow, "make test") {
					t.Errorf("session pattern missing from %v", p.Allow)
				}
			},
		},
		{
			name:    "session without mode keeps the default",
			session: &Policy{Allow: []string{"make test"}},
			check: func(t *testing.T, p Policy) {
				if p.Mode != ModeReview {
					t.Errorf("mode = %q, want review", p.Mode)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wt := t.TempDir()
			if tc.settings != "" {
				writeSettings(t, wt, tc.settings)
			}
			p, err := LoadPolicy(wt, tc.session)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, p)
		})
	}
}

// A hostile repository controls .corral/settings.json: it may add
// patterns and narrow, but not widen the gate beyond that.
func TestLoadPolicyRefusesProjectWidening(t *testing.T) {
	cases := []struct {
		name, settings, field string
		widening              bool
	}{
		{"network", `{"gate": {"allowNetwork": true}}`, "gate.allowNetwork", true},
		{"unattended", `{"gate": {"unattended": true}}`, "gate.unattended", true},
		{"auto mode", `{"gate": {"mode": "auto"}}`, "gate.mode", true},
		{"web hosts", `{"gate": {"webHosts": ["evil.test"]}}`, "gate.webHosts", true},
		{"read roots", `{"gate": {"readRoots": ["~"]}}`, "gate.readRoots", true},
		{"mcp tools", `{"gate": {"mcpTools": ["*/*"]}}`, "gate.mcpTools", true},
		{"switching off sensitive paths", `{"gate": {"sensitivePaths": false}}`, "gate", false},
		{"allowing everything", `{"gate": {"allow": ["*"]}}`, "gate.allow", false},
		{"allowing a wrapper", `{"gate": {"allow": ["bash *"]}}`, "gate.allow", false},
		{"bad mode", `{"gate": {"mode": "yolo"}}`, "gate.mode", false},
		{"bad JSON", `{"gate": `, "", false},
		{"two objects", `{"gate": {}} {}`, "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wt := t.TempDir()
			writeSettings(t, wt, tc.settings)
			_, err := LoadPolicy(wt, nil)
			if err == nil {
				t.Fatal("LoadPolicy succeeded, want an error")
			}
			var pe *PolicyError
			if !errors.As(err, &pe) {
				t.Fatalf("error %v is not a *PolicyError", err)
			}
			if pe.Layer != LayerProject || pe.Field != tc.field {
				t.Errorf("error layer %q field %q, want project %q (%v)", pe.Layer, pe.Field, tc.field, err)
			}
			if got := errors.Is(err, ErrWidening); got != tc.widening {
				t.Errorf("errors.Is(ErrWidening) = %v, want %v (%v)", got, tc.widening, err)
			}
		})
	}
}

func TestLoadPolicyAllowsExplicitFalse(t *testing.T) {
	wt := t.TempDir()
	writeSettings(t, wt, `{"gate": {"allowNetwork": false, "unattended": false, "mode": "review"}}`)
	if _, err := LoadPolicy(wt, nil); err != nil {
		t.Fatalf("setting widening fields to their defaults: %v", err)
	}
}

func TestLoadPolicySettingsFileMustBeRegular(t *testing.T) {
	t.Run("directory", func(t *testing.T) {
		wt := t.TempDir()
		if err := os.MkdirAll(filepath.Join(wt, ".corral", "settings.json"), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadPolicy(wt, nil); err == nil {
			t.Fatal("a directory as settings file was accepted")
		}
	})
	t.Run("too large", func(t *testing.T) {
		wt := t.TempDir()
		writeSettings(t, wt, `{"gate": {}, "pad": "`+strings.Repeat("x", maxSettingsBytes)+`"}`)
		if _, err := LoadPolicy(wt, nil); err == nil {
			t.Fatal("an oversized settings file was accepted")
		}
	})
}

func TestLoadPolicyRejectsBadSession(t *testing.T) {
	_, err := LoadPolicy(t.TempDir(), &Policy{Allow: []string{"env *"}})
	var pe *PolicyError
	if !errors.As(err, &pe) || pe.Layer != LayerSession || pe.Field != "allow" {
		t.Fatalf("err = %v, want a session allow error", err)
	}
}

func TestDecodePolicyRejectsUnknownFields(t *testing.T) {
	if _, err := DecodePolicy(strings.NewReader(`{"alow": ["ls *"]}`)); err == nil {
		t.Fatal("a misspelt field was accepted")
	}
	p, err := DecodePolicy(strings.NewReader(`{"mode": "auto", "allow": ["ls *"], "allowNetwork": true}`))
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != ModeAuto || !p.AllowNetwork || len(p.Allow) != 1 {
		t.Errorf("decoded %+v", p)
	}
}

func TestDefaultAllowlistHoldsOnlyReadOnlyCommands(t *testing.T) {
	for _, s := range DefaultPolicy().Allow {
		p, err := compileAllowPattern(s)
		if err != nil {
			t.Errorf("default pattern %q: %v", s, err)
			continue
		}
		for _, name := range p.words[0] {
			if !readOnlyCommand(name) && name != "git" && name != "go" && name != "find" && name != "sed" {
				t.Errorf("default pattern %q allows %s, which the gate does not know to be read-only", s, name)
			}
		}
	}
}
