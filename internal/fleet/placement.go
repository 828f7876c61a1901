package fleet

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/corral-dev/corral/pkg/wire"
)

// Want is what a new session asks of the node it is placed on.
type Want struct {
	// Node, when set, is the node the session must run on.
	Node string
	// Labels must all be on the node with these values.
	Labels map[string]string
	// Engine must be installed on the node.
	Engine string
}

// Placement is where a session was placed and why: it is recorded in the
// catalog and shown in the session object.
type Placement struct {
	Node string `json:"node"`
	// Reason says why this node, in words.
	Reason string `json:"reason"`
	// Requested says the node was asked for (Want.Node), not chosen.
	Requested bool `json:"requested,omitempty"`
}

// cliEngines are the engines that need an agent CLI installed on the node
// (NodeInfo.Engines lists those it has); the script engine and plugins
// run in the runner.
var cliEngines = []string{"claude", "codex", "copilot"}

// engineMemory is roughly what a session on an engine takes beside its
// runner, in bytes: the agent CLI's resident memory (a Claude Code CLI
// about 190 MB, a Codex app-server about 80 MB); the script engine and
// plugins run in the runner (about 10 MB).
func engineMemory(engine string) uint64 {
	switch engine {
	case "claude", "copilot":
		return 200 << 20
	case "codex":
		return 90 << 20
	default:
		return 10 << 20
	}
}

// placer chooses nodes for new sessions. It counts the sessions it placed
// on each node since that node's last heartbeat, so that a burst of
// creations between two heartbeats is spread instead of all landing on
// the node that looked emptiest.
type placer struct {
	// pick returns a number in [0, n): two candidates are drawn and the
	// emptier wins ("power of two choices"), which spreads concurrent
	// placements from several front nodes too.
	pick func(n int) int
	// recent counts placements per node instance since its heartbeat
	// reported the Live it shows.
	recent map[placedKey]int
}

type placedKey struct {
	node string
	live int // the Live of the heartbeat the count is on top of
}

func newPlacer(pick func(int) int) *placer {
	return &placer{pick: pick, recent: map[placedKey]int{}}
}

type candidate struct {
	info NodeInfo
	live int // reported plus placed since
}

func (c candidate) free() float64 {
	if c.info.MaxLive <= 0 {
		return 0
	}
	return 1 - float64(c.live)/float64(c.info.MaxLive)
}

// place chooses a node among nodes for w; held counts the sessions each
// node holds by the catalog. Not safe for concurrent use.
func (p *placer) place(w Want, nodes []NodeInfo, held map[string]int) (Placement, error) {
	if len(nodes) == 0 {
		return Placement{}, wire.Errorf(wire.CodeUnavailable, "no node is in the fleet")
	}
	var fit []candidate
	var refusals []string
	for _, n := range nodes {
		if w.Node != "" && n.Name != w.Node {
			continue
		}
		c := candidate{info: n, live: n.Live + p.recent[placedKey{n.Name, n.Live}]}
		if why := misfit(w, c); why != "" {
			refusals = append(refusals, n.Name+" "+why)
			continue
		}
		fit = append(fit, c)
	}
	if w.Node != "" && len(fit) == 0 && len(refusals) == 0 {
		return Placement{}, wire.Errorf(wire.CodeUnavailable, "node %s is not in the fleet (alive: %s)", w.Node, nodeNames(nodes))
	}
	if len(fit) == 0 {
		return Placement{}, wire.Errorf(wire.CodeUnavailable, "no node fits the session: %s", strings.Join(refusals, "; "))
	}
	// A node at its --max-live may still stop an idle session to make
	// room: it is chosen only when every fitting node is full.
	var open []candidate
	for _, c := range fit {
		if c.info.MaxLive <= 0 || c.live < c.info.MaxLive {
			open = append(open, c)
		}
	}
	full := len(open) == 0
	if !full {
		fit = open
	}
	best := fit[0]
	if len(fit) > 1 {
		a, b := fit[p.pick(len(fit))], fit[p.pick(len(fit))]
		best = a
		switch {
		case full:
			// Every one is at its cap and reports it (a node never runs
			// more): the one holding fewer sessions.
			if held[b.info.Name] < held[a.info.Name] {
				best = b
			}
		case b.free() > a.free() || (b.free() == a.free() && b.info.MemAvailable > a.info.MemAvailable):
			best = b
		}
	}
	p.recent[placedKey{best.info.Name, best.info.Live}]++
	p.forgetStale(nodes)

	pl := Placement{Node: best.info.Name, Requested: w.Node != ""}
	var why strings.Builder
	if pl.Requested {
		why.WriteString("asked for; ")
	}
	fmt.Fprintf(&why, "%d of %d live", best.live, best.info.MaxLive)
	if best.info.MemAvailable > 0 {
		fmt.Fprintf(&why, ", %s free", bytesText(best.info.MemAvailable))
	}
	if len(w.Labels) > 0 {
		fmt.Fprintf(&why, ", has %s", labelsText(w.Labels))
	}
	if full {
		why.WriteString("; every fitting node is full, so this one stops an idle session to make room or refuses")
	}
	switch {
	case pl.Requested || len(fit) < 2:
	case full:
		fmt.Fprintf(&why, "; of two drawn from %d fitting nodes, the one holding fewer sessions (%d)", len(fit), held[best.info.Name])
	default:
		fmt.Fprintf(&why, "; the emptier of two drawn from %d fitting nodes", len(fit))
	}
	if len(refusals) > 0 {
		fmt.Fprintf(&why, "; not %s", strings.Join(refusals, ", "))
	}
	pl.Reason = why.String()
	return pl, nil
}

// forgetStale drops the counts a newer heartbeat has taken in.
func (p *placer) forgetStale(nodes []NodeInfo) {
	now := map[placedKey]bool{}
	for _, n := range nodes {
		now[placedKey{n.Name, n.Live}] = true
	}
	for k := range p.recent {
		if !now[k] {
			delete(p.recent, k)
		}
	}
}

// misfit says why c cannot take a session wanting w, or "" when it can.
func misfit(w Want, c candidate) string {
	for k, v := range w.Labels {
		if got, ok := c.info.Labels[k]; !ok || got != v {
			return fmt.Sprintf("(lacks label %s=%s)", k, v)
		}
	}
	if slices.Contains(cliEngines, w.Engine) && !slices.Contains(c.info.Engines, w.Engine) {
		return fmt.Sprintf("(has no engine %s)", w.Engine)
	}
	if need := engineMemory(w.Engine); c.info.MemAvailable > 0 && c.info.MemAvailable < need {
		return fmt.Sprintf("(%s free, %s needs about %s)", bytesText(c.info.MemAvailable), w.Engine, bytesText(need))
	}
	return ""
}

func nodeNames(nodes []NodeInfo) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return strings.Join(out, ", ")
}

func labelsText(l map[string]string) string {
	var out []string
	for k, v := range l {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func bytesText(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	default:
		return fmt.Sprintf("%d MiB", n>>20)
	}
}
