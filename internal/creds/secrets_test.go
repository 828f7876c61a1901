package creds

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"

	"github.com/corral-dev/corral/pkg/wire"
)

// stores returns a keyring store (go-keyring's mock provider) and a file
// store, fresh, to run the same test on both.
func stores(t *testing.T) map[Kind]*Secrets {
	t.Helper()
	keyring.MockInit()
	file := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(file, []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	fs, err := OpenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return map[Kind]*Secrets{KindKeyring: NewKeyring(OSKeyring{}), KindFile: fs}
}

func TestSetGetDeleteList(t *testing.T) {
	for kind, s := range stores(t) {
		t.Run(string(kind), func(t *testing.T) {
			if s.Kind() != kind {
				t.Fatalf("Kind() = %s", s.Kind())
			}
			if v, err := s.Get(AnthropicAPIKey); err != nil || v != "" {
				t.Fatalf("Get of an item never set = %q, %v; want empty, nil", v, err)
			}
			if err := s.Set(AnthropicAPIKey, "sk-ant-1"); err != nil {
				t.Fatal(err)
			}
			if err := s.Set(AnthropicAPIKey, "sk-ant-2"); err != nil {
				t.Fatal(err)
			}
			if err := s.Set(GitHubToken, "ghp_1"); err != nil {
				t.Fatal(err)
			}
			if v, _ := s.Get(AnthropicAPIKey); v != "sk-ant-2" {
				t.Fatalf("Get after two Sets = %q, want the second", v)
			}
			got, err := s.Pick([]string{AnthropicAPIKey, OpenAIAPIKey})
			if err != nil || len(got) != 1 || got[AnthropicAPIKey] != "sk-ant-2" {
				t.Fatalf("Pick = %v, %v; want only the anthropic key", got, err)
			}
			list := s.List()
			if len(list) != len(Items) {
				t.Fatalf("List has %d items, want %d", len(list), len(Items))
			}
			for _, is := range list {
				want := is.Item == AnthropicAPIKey || is.Item == GitHubToken
				if is.Set != want || is.Err != nil {
					t.Errorf("List: %+v, want set=%v", is, want)
				}
			}
			if err := s.Delete(GitHubToken); err != nil {
				t.Fatal(err)
			}
			if err := s.Delete(GitHubToken); !errors.Is(err, wire.ErrNotFound) {
				t.Fatalf("second Delete = %v, want not_found", err)
			}
			if v, _ := s.Get(GitHubToken); v != "" {
				t.Fatalf("Get after Delete = %q", v)
			}
		})
	}
}

func TestRefusals(t *testing.T) {
	const secret = "sk-secret-in-the-message?"
	for kind, s := range stores(t) {
		t.Run(string(kind), func(t *testing.T) {
			for _, tc := range []struct {
				name         string
				item, secret string
				code         wire.Code
			}{
				{"unknown item", "aws-key", "x", wire.CodeBadRequest},
				{"empty secret", OpenAIAPIKey, "", wire.CodeBadRequest},
				{"trailing newline", OpenAIAPIKey, secret + "\n", wire.CodeBadRequest},
				{"leading space", OpenAIAPIKey, " " + secret, wire.CodeBadRequest},
				{"control character", OpenAIAPIKey, secret[:5] + "\x00" + secret[5:], wire.CodeBadRequest},
				{"invalid UTF-8", OpenAIAPIKey, secret + "\xff", wire.CodeBadRequest},
				{"too long", OpenAIAPIKey, strings.Repeat("k", MaxSecret+1), wire.CodeBadRequest},
			} {
				t.Run(tc.name, func(t *testing.T) {
					err := s.Set(tc.item, tc.secret)
					if we := wire.ToError(err); err == nil || we.Code != tc.code {
						t.Fatalf("Set = %v, want code %s", err, tc.code)
					}
					if strings.Contains(err.Error(), strings.TrimSpace(tc.secret)) && tc.secret != "x" && tc.secret != "" {
						t.Fatalf("the error quotes the secret: %v", err)
					}
				})
			}
			if v, _ := s.Get(OpenAIAPIKey); v != "" {
				t.Fatalf("a refused Set stored %q", v)
			}
			if _, err := s.Get("aws-key"); !errors.Is(err, wire.ErrBadRequest) {
				t.Fatalf("Get of an unknown item = %v, want bad_request", err)
			}
		})
	}
}

// The file store keeps the file private and readable as a credentials
// file, and never rewrites one that fails LoadFile's checks.
func TestFileStoreRewritesPrivately(t *testing.T) {
	file := filepath.Join(t.TempDir(), "credentials.json")
	if err := os.WriteFile(file, []byte(`{"openai-api-key":"sk-1"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := OpenFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set(GitHubToken, "ghp_2"); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode after a rewrite = %#o, want 0600", fi.Mode().Perm())
	}
	raw, _ := os.ReadFile(file)
	var items map[string]string
	if err := json.Unmarshal(raw, &items); err != nil || items["openai-api-key"] != "sk-1" || items["github-token"] != "ghp_2" {
		t.Fatalf("file after Set = %s (%v)", raw, err)
	}
	if _, err := LoadFile(file); err != nil {
		t.Fatalf("the rewritten file fails its own checks: %v", err)
	}

	// Someone opens the file to others: nothing is read from it or
	// written to it until it is private again.
	if err := os.Chmod(file, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(OpenAIAPIKey); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("Get from a world-readable file = %v, want unavailable", err)
	}
	if err := s.Set(OpenAIAPIKey, "sk-3"); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("Set into a world-readable file = %v, want unavailable", err)
	}
	if list := s.List(); list[0].Err == nil {
		t.Fatalf("List of a world-readable file reports no error: %+v", list)
	}
	if after, _ := os.ReadFile(file); string(after) != string(raw) {
		t.Fatal("a refused Set rewrote the file")
	}
}

func TestOpenFileRefusesWhatLoadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	open := filepath.Join(dir, "open.json")
	os.WriteFile(open, []byte("{}"), 0o644)
	if _, err := OpenFile(open); err == nil {
		t.Fatal("OpenFile accepted a world-readable file")
	}
	if _, err := OpenFile(filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("OpenFile accepted a missing file")
	}
}

// A keyring without a Secret Service: every use is unavailable, saying
// how to do without one; Pick returns no secret and the error.
func TestKeyringUnavailable(t *testing.T) {
	keyring.MockInitWithError(errors.New("The name org.freedesktop.secrets was not provided by any .service files"))
	s := NewKeyring(OSKeyring{})
	got, err := s.Pick([]string{AnthropicAPIKey})
	if len(got) != 0 || !errors.Is(err, wire.ErrUnavailable) || !strings.Contains(err.Error(), "--credentials FILE") {
		t.Fatalf("Pick = %v, %v", got, err)
	}
	if err := s.Set(AnthropicAPIKey, "sk-1"); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("Set = %v", err)
	}
	if err := s.Delete(AnthropicAPIKey); !errors.Is(err, wire.ErrUnavailable) {
		t.Fatalf("Delete = %v", err)
	}
}
