package store

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/corral-dev/corral/internal/graph"
)

// Process is this process as claims and locks name it: its pid, its start
// time in clock ticks since boot (which tells a reused pid apart), and the
// boot it runs in. It also remembers the tickets this process holds, so
// that a claim with this pid whose ticket it no longer holds (a previous
// incarnation, a claim dropped by a panic) can be reclaimed. It implements
// graph.Owners. The zero value is not usable; use Self.
type Process struct {
	pid   int
	start uint64
	boot  string

	mu   sync.Mutex
	held map[string]bool // nonces of tickets this process holds
}

// Self describes this process. Its boot id comes from
// /proc/sys/kernel/random/boot_id; where there is none, a fixed "unknown",
// which makes every claim look like this boot's.
func Self() *Process {
	p := &Process{pid: os.Getpid(), boot: bootID(), held: map[string]bool{}}
	p.start, _ = startTicks(p.pid)
	return p
}

// PID is this process's pid.
func (p *Process) PID() int { return p.pid }

// Boot is the boot id this process runs in.
func (p *Process) Boot() string { return p.boot }

// NewTicket returns a fresh ticket of this process and holds it until Drop.
func (p *Process) NewTicket() graph.Ticket {
	t := graph.Ticket{PID: p.pid, Start: p.start, Boot: p.boot, Nonce: nonce()}
	p.Hold(t)
	return t
}

// Hold marks t as held by this process.
func (p *Process) Hold(t graph.Ticket) {
	p.mu.Lock()
	p.held[t.Nonce] = true
	p.mu.Unlock()
}

// Drop forgets t: a claim of this pid under it is then reclaimable.
func (p *Process) Drop(t graph.Ticket) {
	p.mu.Lock()
	delete(p.held, t.Nonce)
	p.mu.Unlock()
}

// Holds reports whether this process holds t.
func (p *Process) Holds(t graph.Ticket) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return t.PID == p.pid && p.held[t.Nonce]
}

// Gone reports whether t's owner no longer holds it: t comes from another
// boot; or t carries this pid and this process does not hold it; or its
// owner process is dead, or its pid now belongs to another process.
func (p *Process) Gone(t graph.Ticket) (bool, string) {
	switch {
	case t.Boot != p.boot:
		return true, fmt.Sprintf("the claim comes from another boot (%.8s, this is %.8s)", t.Boot, p.boot)
	case t.PID == p.pid && (t.Start == 0 || t.Start == p.start):
		if p.Holds(t) {
			return false, ""
		}
		return true, fmt.Sprintf("this process (pid %d) no longer holds the ticket", t.PID)
	}
	return processGone(t.PID, t.Start)
}

// processGone reports whether process pid, started at start ticks (0:
// unknown), has ended.
func processGone(pid int, start uint64) (bool, string) {
	if pid <= 0 {
		return true, fmt.Sprintf("pid %d is no process", pid)
	}
	err := syscall.Kill(pid, 0)
	if errors.Is(err, syscall.ESRCH) {
		return true, fmt.Sprintf("its owner, pid %d, is dead", pid)
	}
	// EPERM: alive, another user's.
	if start != 0 {
		if now, err := startTicks(pid); err == nil && now != start {
			return true, fmt.Sprintf("its owner, pid %d, is dead (the pid now belongs to another process)", pid)
		}
	}
	return false, ""
}

// startTicks reads a process's start time, in clock ticks since boot, from
// field 22 of /proc/<pid>/stat.
func startTicks(pid int) (uint64, error) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces and parentheses: the
	// fields after it start after the last ')'.
	i := bytes.LastIndexByte(raw, ')')
	if i < 0 {
		return 0, errors.New("stat: no command name")
	}
	fields := strings.Fields(string(raw[i+1:]))
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, errors.New("stat: too few fields")
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

func bootID() string {
	raw, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(raw))
}

func nonce() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
