// Package creds finds the secrets engines need: in the OS keyring (service
// dev.corral) or, for headless hosts without a keyring service, in a
// credentials file readable by its owner alone. Never in the environment.
package creds

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/corral-dev/corral/internal/ownedfile"

	"github.com/zalando/go-keyring"
)

// Service is the keyring service under which Corral keeps its items.
const Service = "dev.corral"

// Credential item names.
const (
	AnthropicAPIKey = "anthropic-api-key"
	OpenAIAPIKey    = "openai-api-key"
	GitHubToken     = "github-token"
)

// Items lists every item name Corral knows.
var Items = []string{AnthropicAPIKey, OpenAIAPIKey, GitHubToken}

// Store looks credentials up. The zero value reads the OS keyring.
type Store struct {
	// File, when set, is the parsed credentials file; it is used instead
	// of the keyring.
	File map[string]string
}

// maxFile bounds a credentials file.
const maxFile = 1 << 20

// LoadFile reads a credentials file: a JSON object of item names to secrets.
// It refuses a file that is not the running user's, that anyone else can
// read or write (it must be 0600 or 0400), or that is a symbolic link.
func LoadFile(path string) (*Store, error) {
	raw, err := ownedfile.ReadPrivate(path, maxFile)
	if err != nil {
		return nil, fmt.Errorf("credentials file: %w", err)
	}
	var items map[string]string
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, fmt.Errorf("credentials file %s: not a JSON object of strings: %w", path, err)
	}
	known := map[string]bool{}
	for _, k := range Items {
		known[k] = true
	}
	for k := range items {
		if !known[k] {
			return nil, fmt.Errorf("credentials file %s: unknown item %q (known: %v)", path, k, Items)
		}
	}
	return &Store{File: items}, nil
}

// Get returns the secret for item, or "" when there is none. An error means
// the store could not be read (for example no keyring service is running).
func (s *Store) Get(item string) (string, error) {
	if s != nil && s.File != nil {
		return s.File[item], nil
	}
	v, err := keyring.Get(Service, item)
	if errors.Is(err, keyring.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("keyring %s/%s: %w", Service, item, err)
	}
	return v, nil
}

// All returns every item that is set. Keyring errors are reported only when
// no item could be read at all.
func (s *Store) All() (map[string]string, error) {
	out := map[string]string{}
	var firstErr error
	for _, item := range Items {
		v, err := s.Get(item)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if v != "" {
			out[item] = v
		}
	}
	if len(out) == 0 && firstErr != nil {
		return out, firstErr
	}
	return out, nil
}
