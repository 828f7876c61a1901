package webauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"time"
)

// vault keeps secrets of one kind by their SHA-256 digests, each with its
// expiry. A vault is not safe for concurrent use; the Authority locks.
type vault struct {
	ttl time.Duration
	max int
	m   map[[sha256.Size]byte]time.Time
}

func newVault(ttl time.Duration, max int) vault {
	return vault{ttl: ttl, max: max, m: make(map[[sha256.Size]byte]time.Time)}
}

// add mints a secret: 32 random bytes, base64url without padding, so it
// travels unescaped in a cookie, a header and a query string.
func (v *vault) add(now time.Time) Secret {
	if len(v.m) >= v.max {
		v.makeRoom(now)
	}
	var raw [32]byte
	rand.Read(raw[:]) // never fails (crypto/rand)
	s := Secret{Value: base64.RawURLEncoding.EncodeToString(raw[:]), ExpiresAt: now.Add(v.ttl)}
	v.m[sha256.Sum256([]byte(s.Value))] = s.ExpiresAt
	return s
}

// valid reports whether s is a live secret of the vault.
func (v *vault) valid(now time.Time, s string) bool {
	if s == "" {
		return false
	}
	d := sha256.Sum256([]byte(s))
	exp, ok := v.m[d]
	if ok && !now.Before(exp) {
		delete(v.m, d)
		return false
	}
	return ok
}

// take uses up s, reporting whether it was live.
func (v *vault) take(now time.Time, s string) bool {
	ok := v.valid(now, s)
	if ok {
		v.remove(s)
	}
	return ok
}

func (v *vault) remove(s string) {
	delete(v.m, sha256.Sum256([]byte(s)))
}

// makeRoom drops every expired secret and, when none had, the one closest
// to its expiry.
func (v *vault) makeRoom(now time.Time) {
	var first [sha256.Size]byte
	var firstExp time.Time
	for d, exp := range v.m {
		if !now.Before(exp) {
			delete(v.m, d)
			continue
		}
		if firstExp.IsZero() || exp.Before(firstExp) {
			first, firstExp = d, exp
		}
	}
	if len(v.m) >= v.max {
		delete(v.m, first)
	}
}
