package creds

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/zalando/go-keyring"

	"github.com/corral-dev/corral/internal/atomicfile"
	"github.com/corral-dev/corral/pkg/wire"
)

// MaxSecret bounds one secret, in bytes. Provider keys and tokens are a few
// hundred bytes; the bound keeps a mistaken paste (a whole file) out of
// the keyring and out of every runner's start message.
const MaxSecret = 16 << 10

// Keyring is what Secrets needs of an OS keyring. OSKeyring is the real
// one (go-keyring: the Secret Service on Linux, the Keychain on macOS).
type Keyring interface {
	Get(service, item string) (string, error)
	Set(service, item, secret string) error
	Delete(service, item string) error
}

// OSKeyring is the operating system's keyring, through go-keyring. Its
// ErrNotFound is keyring.ErrNotFound.
type OSKeyring struct{}

func (OSKeyring) Get(service, item string) (string, error) { return keyring.Get(service, item) }
func (OSKeyring) Set(service, item, secret string) error   { return keyring.Set(service, item, secret) }
func (OSKeyring) Delete(service, item string) error        { return keyring.Delete(service, item) }

// Kind names where Secrets keeps its items.
type Kind string

// Where secrets are kept.
const (
	KindKeyring Kind = "keyring"
	KindFile    Kind = "file"
)

// Secrets is where a supervisor keeps the credentials it hands its
// runners: the OS keyring (service dev.corral), or the credentials file it
// was started with on a host without a keyring service. It reads the store
// at each use, so an item set or removed (here, with secret-tool, or by
// editing the file) counts from the next runner that starts.
//
// A secret goes in through Set and out through Get and Pick only: nothing
// here formats, logs or returns one in an error.
type Secrets struct {
	file string // empty: the keyring
	ring Keyring
	// mu serialises the store's use: a rewrite of the file, and keyring
	// calls (one D-Bus conversation at a time).
	mu sync.Mutex
}

// NewKeyring returns Secrets kept in ring under Service.
func NewKeyring(ring Keyring) *Secrets { return &Secrets{ring: ring} }

// OpenFile returns Secrets kept in the credentials file path, which must
// pass LoadFile's checks now (a supervisor refuses to start otherwise).
func OpenFile(path string) (*Secrets, error) {
	if _, err := LoadFile(path); err != nil {
		return nil, err
	}
	return &Secrets{file: path}, nil
}

// Kind says where the secrets are kept.
func (s *Secrets) Kind() Kind {
	if s.file != "" {
		return KindFile
	}
	return KindKeyring
}

// Location names the store for people: the file's path, or the keyring's
// service.
func (s *Secrets) Location() string {
	if s.file != "" {
		return s.file
	}
	return "OS keyring, service " + Service
}

// CheckItem refuses an item name Corral does not know.
func CheckItem(item string) error {
	if !slices.Contains(Items, item) {
		return wire.Errorf(wire.CodeBadRequest, "unknown credential item %q (known: %s)", item, strings.Join(Items, ", "))
	}
	return nil
}

// CheckSecret refuses what cannot be a key or token: nothing, more than
// MaxSecret bytes, spaces around it, control characters, invalid UTF-8.
// The message never quotes the secret.
func CheckSecret(secret string) error {
	switch {
	case secret == "":
		return wire.Errorf(wire.CodeBadRequest, "the secret is empty (to remove an item, delete it)")
	case len(secret) > MaxSecret:
		return wire.Errorf(wire.CodeBadRequest, "the secret is %d bytes; at most %d are accepted", len(secret), MaxSecret)
	case strings.TrimSpace(secret) != secret:
		return wire.Errorf(wire.CodeBadRequest, "the secret starts or ends with white space (a stray newline?)")
	}
	for i, r := range secret {
		if r == unicode.ReplacementChar || unicode.IsControl(r) {
			return wire.Errorf(wire.CodeBadRequest, "the secret has a control character or invalid UTF-8 at byte %d", i)
		}
	}
	return nil
}

// Get returns item's secret, or "" when it is not set. An error means the
// store could not be read.
func (s *Secrets) Get(item string) (string, error) {
	if err := CheckItem(item); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reader()(item)
}

// reader returns a function reading items from the store: the file is
// read once for all of them, the keyring asked item by item.
func (s *Secrets) reader() func(item string) (string, error) {
	if s.file != "" {
		st, err := LoadFile(s.file)
		return func(item string) (string, error) {
			if err != nil {
				return "", wire.Errorf(wire.CodeUnavailable, "%v", err)
			}
			return st.File[item], nil
		}
	}
	return func(item string) (string, error) {
		v, err := s.ring.Get(Service, item)
		switch {
		case errors.Is(err, keyring.ErrNotFound):
			return "", nil
		case err != nil:
			return "", keyringErr("read", item, err)
		}
		return v, nil
	}
}

// Pick returns the secrets of those items that are set. When the store
// cannot be read it returns what it could read and the first error.
func (s *Secrets) Pick(items []string) (map[string]string, error) {
	out := map[string]string{}
	if len(items) == 0 {
		return out, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	get := s.reader()
	var firstErr error
	for _, item := range items {
		if err := CheckItem(item); err != nil {
			return out, err
		}
		v, err := get(item)
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
	return out, firstErr
}

// Set stores secret as item, replacing what was there.
func (s *Secrets) Set(item, secret string) error {
	if err := CheckItem(item); err != nil {
		return err
	}
	if err := CheckSecret(secret); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.file != "" {
		return s.rewrite(func(items map[string]string) error { items[item] = secret; return nil })
	}
	if err := s.ring.Set(Service, item, secret); err != nil {
		return keyringErr("store", item, err)
	}
	return nil
}

// Delete removes item; not_found when it is not set.
func (s *Secrets) Delete(item string) error {
	if err := CheckItem(item); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	notSet := wire.Errorf(wire.CodeNotFound, "credential item %s is not set in %s", item, s.Location())
	if s.file != "" {
		return s.rewrite(func(items map[string]string) error {
			if _, ok := items[item]; !ok {
				return notSet
			}
			delete(items, item)
			return nil
		})
	}
	err := s.ring.Delete(Service, item)
	switch {
	case errors.Is(err, keyring.ErrNotFound):
		return notSet
	case err != nil:
		return keyringErr("delete", item, err)
	}
	return nil
}

// ItemState says whether one item is set, never its secret.
type ItemState struct {
	Item string
	Set  bool
	// Err is why the item could not be read (the store is unavailable).
	Err error
}

// List reports every item Corral knows, in Items order.
func (s *Secrets) List() []ItemState {
	s.mu.Lock()
	defer s.mu.Unlock()
	get := s.reader()
	out := make([]ItemState, 0, len(Items))
	for _, item := range Items {
		v, err := get(item)
		out = append(out, ItemState{Item: item, Set: v != "", Err: err})
	}
	return out
}

// rewrite changes the credentials file through change and replaces it
// atomically, mode 0600. It reads the file through LoadFile, so a file
// that fails its checks is never rewritten.
func (s *Secrets) rewrite(change func(map[string]string) error) error {
	st, err := LoadFile(s.file)
	if err != nil {
		return wire.Errorf(wire.CodeUnavailable, "%v", err)
	}
	items := st.File
	if items == nil {
		items = map[string]string{}
	}
	if err := change(items); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(items, "", "  ")
	if err != nil {
		return fmt.Errorf("credentials file %s: %w", s.file, err)
	}
	if err := atomicfile.Write(s.file, append(raw, '\n'), 0o600); err != nil {
		return wire.Errorf(wire.CodeUnavailable, "credentials file: %v", err)
	}
	return nil
}

// keyringErr reports a keyring that could not be used, saying what to do
// on a host without a keyring service.
func keyringErr(op, item string, err error) error {
	if errors.Is(err, keyring.ErrSetDataTooBig) {
		return wire.Errorf(wire.CodeBadRequest, "keyring %s/%s: the secret is too big for this keyring", Service, item)
	}
	return wire.Errorf(wire.CodeUnavailable, "keyring %s/%s: cannot %s it: %v (on a host without a keyring service, start the supervisor with --credentials FILE)",
		Service, item, op, oneLine(err.Error()))
}

func oneLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
