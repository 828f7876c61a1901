package cli

import (
	"flag"
	"os"
	"strings"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/fleet/sessions"
	"github.com/corral-dev/corral/pkg/wire"
)

// fleetOpts are serve's flags for joining a fleet (docs/fleet.md).
type fleetOpts struct {
	nats     multi
	node     string
	labels   multi
	creds    string
	ca       string
	name     string
	replicas int
	leaseTTL time.Duration
}

func fleetFlags(fs *flag.FlagSet) *fleetOpts {
	o := &fleetOpts{}
	host, _ := os.Hostname()
	fs.Var(&o.nats, "nats", "join a fleet through this NATS server URL (repeatable, or comma-separated); without it the supervisor is alone")
	fs.StringVar(&o.node, "node", host, "this supervisor's name in the fleet: letters, digits, '-' and '_'")
	fs.Var(&o.labels, "label", "a fact about this node a session's placement may require, as key=value (repeatable): gpu=1, region=x")
	fs.StringVar(&o.creds, "nats-creds", "", "NATS credentials file (JWT and seed), when the servers ask for one")
	fs.StringVar(&o.ca, "nats-ca", "", "PEM file of the authorities a tls:// NATS server's certificate is checked against (default: the system's)")
	fs.StringVar(&o.name, "fleet", "corral", "the fleet's name: its buckets, stream and subjects on NATS start with it")
	fs.IntVar(&o.replicas, "nats-replicas", 0, "NATS servers that keep each piece of the fleet's state (default 3 in a cluster, else 1)")
	fs.DurationVar(&o.leaseTTL, "lease-ttl", fleet.DefaultTiming().LeaseTTL, "how long a session's lease outlives its node's last renewal; the other timings follow from it")
	return o
}

// config is the fleet's configuration, nil without --nats.
func (o *fleetOpts) config() (*sessions.Config, error) {
	if len(o.nats) == 0 {
		return nil, nil
	}
	var urls []string
	for _, v := range o.nats {
		for _, u := range strings.Split(v, ",") {
			if u = strings.TrimSpace(u); u != "" {
				urls = append(urls, u)
			}
		}
	}
	labels, err := parseLabels(o.labels, "--label")
	if err != nil {
		return nil, err
	}
	timing := fleet.Timing{LeaseTTL: o.leaseTTL}
	if err := timing.WithDefaults().Check(); err != nil {
		return nil, usagef("--lease-ttl: %v", err)
	}
	return &sessions.Config{
		NATS: urls, Creds: o.creds, CA: o.ca, Node: o.node, Labels: labels,
		Fleet: o.name, Replicas: o.replicas, Timing: timing,
	}, nil
}

// parseLabels reads key=value flags.
func parseLabels(vals []string, flag string) (map[string]string, error) {
	if len(vals) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range vals {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q: want key=value", flag, kv)
		}
		out[k] = v
	}
	return out, nil
}

// placementFlags are new's flags choosing a fleet node.
type placementOpts struct {
	node   string
	labels multi
}

func placementFlags(fs *flag.FlagSet) *placementOpts {
	o := &placementOpts{}
	fs.StringVar(&o.node, "node", "", "in a fleet: run the session on this node")
	fs.Var(&o.labels, "require", "in a fleet: run the session on a node with this label, as key=value (repeatable)")
	return o
}

func (o *placementOpts) spec() (*wire.Placement, error) {
	labels, err := parseLabels(o.labels, "--require")
	if err != nil || (o.node == "" && labels == nil) {
		return nil, err
	}
	return &wire.Placement{Node: o.node, Labels: labels}, nil
}
