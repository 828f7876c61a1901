package fleet

import (
	"errors"
	"fmt"
	"time"
)

// Timing is the clockwork of leases and heartbeats. docs/fleet.md derives
// the bounds; Check enforces them.
type Timing struct {
	// LeaseTTL is how long a session's lease lives on the fabric after its
	// last renewal: the NATS servers remove it then (default 30s). A node
	// gives its sessions up 0.7 of it after its last renewal: that must
	// outlast the election of a new leader when a NATS server dies (the
	// servers wait 4 to 9 s before they call one).
	LeaseTTL time.Duration
	// Renew is how often a node renews the leases it holds (default
	// LeaseTTL/10).
	Renew time.Duration
	// Margin is kept between the local deadline of a lease and its expiry
	// on the servers, for the skew between the NATS servers' clocks and
	// the drift of this machine's (default LeaseTTL/5).
	Margin time.Duration
	// StopBudget is how long a node allows itself to stop a session's
	// runner: it starts to stop it this long before the local deadline
	// (default LeaseTTL/10).
	StopBudget time.Duration
	// NodeTTL is how long a node stays in the registry after its last
	// heartbeat (default LeaseTTL).
	NodeTTL time.Duration
	// Heartbeat is how often a node publishes its capacity (default
	// NodeTTL/5).
	Heartbeat time.Duration
	// Request bounds one request over the fabric (default 10s).
	Request time.Duration
	// Resend is how long a request waits for its answer before it is sent
	// again, under the same id, within Request (default Request/5): a
	// request or answer on its way through a NATS server that dies is
	// lost with it, and the node serving it answers a copy sent again
	// without running it twice.
	Resend time.Duration
}

// DefaultTiming is the timing of a production fleet.
func DefaultTiming() Timing {
	return Timing{LeaseTTL: 30 * time.Second}.WithDefaults()
}

// WithDefaults fills in every duration left zero from LeaseTTL.
func (t Timing) WithDefaults() Timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.LeaseTTL, 30*time.Second)
	def(&t.Renew, t.LeaseTTL/10)
	def(&t.Margin, t.LeaseTTL/5)
	def(&t.StopBudget, t.LeaseTTL/10)
	def(&t.NodeTTL, t.LeaseTTL)
	def(&t.Heartbeat, t.NodeTTL/5)
	def(&t.Request, 10*time.Second)
	def(&t.Resend, t.Request/5)
	return t
}

// attempt is how long try k (from 0) of a request over the fabric waits
// for its answer: Resend for the first electionTries, then twice as long
// at each try, at most Request. While a stream has no leader its requests
// go unanswered: short tries catch the new leader soon after the
// election, and a slow server still gets the time it needs afterwards.
func (t Timing) attempt(k int) time.Duration {
	d := t.Resend
	for k -= electionTries - 1; k > 0 && d < t.Request; k-- {
		d *= 2
	}
	return min(d, t.Request)
}

// electionTries is how many tries of Resend each a request makes before
// it waits longer: at the default 2 s, 8 s, about as long as a leader
// election after a NATS server's death.
const electionTries = 4

// holdFor is how long after a renewal was sent a node may keep the
// session's runner: the local deadline is sent + holdFor.
func (t Timing) holdFor() time.Duration { return t.LeaseTTL - t.Margin }

// stopAfter is how long after a renewal was sent the node starts to stop
// the runner if no later renewal succeeded.
func (t Timing) stopAfter() time.Duration { return t.LeaseTTL - t.Margin - t.StopBudget }

// Check reports timing that cannot keep a session on one node at a time,
// or that would give up a healthy lease.
func (t Timing) Check() error {
	switch {
	case t.LeaseTTL < 500*time.Millisecond:
		return fmt.Errorf("lease TTL %v is too short (at least 500ms)", t.LeaseTTL)
	case t.Margin <= 0 || t.StopBudget <= 0 || t.Renew <= 0 || t.Heartbeat <= 0 || t.NodeTTL <= 0 || t.Request <= 0 || t.Resend <= 0:
		return errors.New("every fleet duration must be positive")
	case t.stopAfter() < 2*t.Renew:
		return fmt.Errorf("lease TTL %v minus margin %v and stop budget %v leaves room for fewer than two renewals every %v",
			t.LeaseTTL, t.Margin, t.StopBudget, t.Renew)
	case t.NodeTTL < 2*t.Heartbeat:
		return fmt.Errorf("node TTL %v leaves room for fewer than two heartbeats every %v", t.NodeTTL, t.Heartbeat)
	}
	return nil
}

// names are the fabric's buckets, stream and subjects for one fleet. Two
// fleets on one NATS account keep apart by their names.
type names struct {
	fleet string
}

func (n names) nodesBucket() string    { return n.fleet + "_nodes" }
func (n names) leasesBucket() string   { return n.fleet + "_leases" }
func (n names) sessionsBucket() string { return n.fleet + "_sessions" }
func (n names) eventsStream() string   { return n.fleet + "_events" }

// eventSubject is where the events of session from seq first on go: one
// subject per 4096 seqs (see replica.go).
func (n names) eventSubject(session string, first int64) string {
	return fmt.Sprintf("%s.ev.%s.%d", n.fleet, session, first>>eventBucketBits)
}

// sessionEvents matches every event subject of session.
func (n names) sessionEvents(session string) string { return n.fleet + ".ev." + session + ".*" }

// allEvents matches every event subject of the fleet.
func (n names) allEvents() string { return n.fleet + ".ev.>" }

// life is the subject of session's lifecycle changes (life("") is the
// prefix of them all).
func (n names) life(session string) string { return n.fleet + ".life." + session }

// allLife matches every lifecycle subject of the fleet.
func (n names) allLife() string { return n.fleet + ".life.>" }

// rpc is the subject of an operation served by node.
func (n names) rpc(node, op string) string { return n.fleet + ".rpc." + node + "." + op }

// rpcAll matches every operation served by node.
func (n names) rpcAll(node string) string { return n.fleet + ".rpc." + node + ".>" }

// term is the subject of one direction of a terminal bridged between two
// nodes: dir "out" carries the terminal's output to the node of its
// client, "in" its client's keystrokes to the node of its session.
func (n names) term(node, bridge, dir string) string {
	return n.fleet + ".term." + node + "." + bridge + "." + dir
}

// validToken accepts names safe as one NATS subject token and one key:
// letters, digits, '-' and '_', 1 to 64 of them.
func validToken(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
		default:
			return false
		}
	}
	return true
}
