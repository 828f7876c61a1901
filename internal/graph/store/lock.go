package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync/atomic"
	"time"

	"github.com/corral-dev/corral/internal/graph"
)

// A run's lock is a file, <run>/lock, holding the owner's ticket. It is
// taken with link(2) of a fully written temporary file, so it appears
// whole or not at all and exactly one taker succeeds; it is released by
// removing it. A waiter polls until the lock is gone or the wait, measured
// on the monotonic clock, times out. A lock whose owner is dead is broken,
// but only under a steal lock named after that owner's nonce
// (<run>/lock.steal.<nonce>), itself taken with link(2): of every process
// that finds the same dead owner exactly one wins it, checks the lock still
// holds that nonce, and removes it. Nonces never repeat, so a stealer that
// comes late finds another nonce (or none) in the lock and leaves it. A
// stealer that dies holding a steal lock is itself a dead owner: its steal
// lock is broken the same way, one level down.

// lockWaitMax is the longest pause between two looks at a held lock.
const lockWaitMax = 10 * time.Millisecond

// maxStealDepth bounds the chain of dead stealers broken in one go.
const maxStealDepth = 8

// lock is a held run lock.
type lock struct {
	path   string
	ticket graph.Ticket
	raw    []byte
	proc   *Process
}

// steals counts locks broken by this process, for tests and diagnostics.
var steals atomic.Int64

// Steals returns how many dead owners' locks this process has broken.
func Steals() int64 { return steals.Load() }

// acquire takes the lock at path for this process, waiting up to timeout
// on the monotonic clock; a live owner's lock is never taken.
func acquire(ctx context.Context, path string, proc *Process, clock Clock, timeout time.Duration) (*lock, error) {
	t := proc.NewTicket()
	raw, _ := json.Marshal(t)
	tmp := path + "." + t.Nonce + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		proc.Drop(t)
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	defer os.Remove(tmp)
	start := clock.Mono()
	pause := 100 * time.Microsecond
	for {
		err := os.Link(tmp, path)
		if err == nil {
			return &lock{path: path, ticket: t, raw: raw, proc: proc}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			proc.Drop(t)
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		owner, ownerRaw, err := readTicket(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // released meanwhile
		case err != nil:
			// Only a crash of the machine leaves a lock file that is
			// not a whole ticket: its owner is gone.
			breakLock(path, ownerRaw, proc, 0)
			continue
		}
		if gone, _ := proc.Gone(owner); gone {
			breakLock(path, ownerRaw, proc, 0)
			continue
		}
		waited := clock.Mono() - start
		if waited >= timeout {
			proc.Drop(t)
			return nil, &graph.Error{Code: graph.CodeLockTimeout,
				Message: fmt.Sprintf("the run is locked by %s; gave up after %s", owner, timeout)}
		}
		if err := clock.Sleep(ctx, min(pause, timeout-waited)); err != nil {
			proc.Drop(t)
			return nil, err
		}
		pause = min(pause*2, lockWaitMax)
	}
}

// release removes the lock if it is still this one.
func (l *lock) release() {
	defer l.proc.Drop(l.ticket)
	if cur, err := os.ReadFile(l.path); err == nil && bytes.Equal(cur, l.raw) {
		os.Remove(l.path)
	}
}

// breakLock removes the lock at path if it still holds victim (the raw
// ticket of a dead owner), under the steal lock named after it.
func breakLock(path string, victim []byte, proc *Process, depth int) {
	if depth > maxStealDepth {
		return
	}
	steal := path + ".steal." + victimKey(victim)
	t := proc.NewTicket()
	defer proc.Drop(t)
	raw, _ := json.Marshal(t)
	tmp := steal + "." + t.Nonce + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return
	}
	err := os.Link(tmp, steal)
	os.Remove(tmp)
	if err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return
		}
		// Another stealer holds it. If it died there, break its steal
		// lock first; the caller then looks again.
		holder, holderRaw, err := readTicket(steal)
		if errors.Is(err, fs.ErrNotExist) {
			return
		}
		if err != nil {
			breakLock(steal, holderRaw, proc, depth+1)
			return
		}
		if gone, _ := proc.Gone(holder); gone {
			breakLock(steal, holderRaw, proc, depth+1)
		}
		return
	}
	defer os.Remove(steal)
	if cur, err := os.ReadFile(path); err == nil && bytes.Equal(cur, victim) {
		if os.Remove(path) == nil && depth == 0 {
			steals.Add(1)
		}
	}
}

// victimKey names a victim's steal lock: its nonce, or a digest of a lock
// file that holds no ticket.
func victimKey(raw []byte) string {
	var t graph.Ticket
	if json.Unmarshal(raw, &t) == nil && t.Nonce != "" && isHex(t.Nonce) {
		return t.Nonce
	}
	sum := sha256.Sum256(raw)
	return "x" + hex.EncodeToString(sum[:12])
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && len(s) <= 64
}

// readTicket reads a lock file's ticket and its raw bytes.
func readTicket(path string) (graph.Ticket, []byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return graph.Ticket{}, nil, err
	}
	var t graph.Ticket
	if err := json.Unmarshal(raw, &t); err != nil || t.Nonce == "" {
		return graph.Ticket{}, raw, fmt.Errorf("lock %s holds no ticket", path)
	}
	return t, raw, nil
}
