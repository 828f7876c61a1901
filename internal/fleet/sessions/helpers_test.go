package sessions_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/corral-dev/corral/internal/fleet/fleettest"
	"github.com/corral-dev/corral/internal/testsupervisor"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestMain(m *testing.M) {
	code := m.Run()
	fleettest.StopShared()
	os.Exit(code)
}

// leaseTTL is the fleet's lease TTL in these tests: short enough to see a
// node's sessions move within seconds.
const leaseTTL = "4s"

// testFleet is NATS servers and supervisor processes on loopback, sharing
// one storage folder (as nodes on a shared volume do).
type testFleet struct {
	t       testing.TB
	cluster *fleettest.Cluster
	storage string
	// work is the sessions' working folder and scenario the script they
	// play, both where every node reaches them.
	work, scenario string
	nodes          []*testsupervisor.Supervisor
	names          []string
	// fleet is the fleet's name: its buckets and stream start with it.
	fleet string
	// proxies, when a node reaches the servers through proxies, by node.
	proxies map[int][]*fleettest.Proxy
	// killed is when each node killed with SIGKILL died: its runners died
	// with it, without a word in its log.
	killed map[string]time.Time
}

// kill kills node i with SIGKILL.
func (f *testFleet) kill(i int) {
	f.nodes[i].Kill()
	f.killed[f.names[i]] = time.Now()
}

type fleetOptions struct {
	nodes   int
	cluster *fleettest.Cluster // default: the shared cluster
	// proxied nodes reach the servers through proxies the test can cut.
	proxied []int
	args    []string
	// nodeArgs are more flags for one node.
	nodeArgs map[int][]string
}

func startFleet(t testing.TB, o fleetOptions) *testFleet {
	t.Helper()
	c := o.cluster
	if c == nil {
		c = fleettest.Shared(t)
	}
	// A short path: session folders hold unix sockets (108 bytes at most).
	base, err := os.MkdirTemp("", "fl")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	f := &testFleet{t: t, cluster: c, storage: filepath.Join(base, "storage"), work: filepath.Join(base, "work"), proxies: map[int][]*fleettest.Proxy{}, killed: map[string]time.Time{}}
	// The sessions' folder and scenario, on the storage every node shares.
	if err := os.MkdirAll(f.work, 0o700); err != nil {
		t.Fatal(err)
	}
	f.scenario = filepath.Join(f.work, "scenario.json")
	if err := os.WriteFile(f.scenario, []byte(`{"fallback": {"steps": [{"say": "heard you"}]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	fleetName := fmt.Sprintf("e%d_%s", os.Getpid()%100000, strings.NewReplacer("/", "_").Replace(t.Name()))
	fleetName = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' {
			return r
		}
		return '_'
	}, fleetName)
	if len(fleetName) > 60 {
		fleetName = fleetName[:60]
	}
	f.fleet = fleetName
	for i := range o.nodes {
		name := fmt.Sprintf("node-%d", i)
		urls := rotate(c.URLs(), i)
		for _, p := range o.proxied {
			if p == i {
				for _, s := range c.Servers {
					f.proxies[i] = append(f.proxies[i], fleettest.NewProxy(t, s.ClientAddr))
				}
				urls = nil
				for _, px := range f.proxies[i] {
					urls = append(urls, px.URL())
				}
			}
		}
		args := []string{"--nats", strings.Join(urls, ","), "--node", name, "--fleet", fleetName,
			"--storage", f.storage, "--lease-ttl", leaseTTL}
		args = append(args, o.args...)
		args = append(args, o.nodeArgs[i]...)
		f.nodes = append(f.nodes, testsupervisor.Start(t, testsupervisor.Options{Args: args}))
		f.names = append(f.names, name)
	}
	// Every node sees every other before the test begins.
	for _, n := range f.nodes {
		waitFor(t, 30*time.Second, "the fleet to see its nodes", func() bool {
			s, err := n.Client.CreateSession(ctxFor(t), wire.Spec{Engine: "script", Cwd: f.work, Scenario: f.scenario, Placement: &wire.Placement{Node: f.names[len(f.names)-1]}})
			if err != nil {
				return false
			}
			n.Client.DeleteSession(ctxFor(t), s.ID)
			return true
		})
	}
	return f
}

// streamLeader is the name of the server leading stream, asked of the
// servers at urls; "" while it has none or none of them answers.
func streamLeader(t testing.TB, urls []string, stream string) string {
	t.Helper()
	nc, err := nats.Connect(strings.Join(urls, ","), nats.Timeout(time.Second), nats.NoReconnect())
	if err != nil {
		return ""
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, stream)
	if err != nil || s.CachedInfo().Cluster == nil {
		return ""
	}
	return s.CachedInfo().Cluster.Leader
}

func rotate(s []string, n int) []string {
	n %= len(s)
	return append(append([]string{}, s[n:]...), s[:n]...)
}

func ctxFor(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// client of node i.
func (f *testFleet) c(i int) *client.Client { return f.nodes[i].Client }

// create makes a script session through node via, on node on (-1: placed).
func (f *testFleet) create(via, on int) api.Session {
	f.t.Helper()
	spec := wire.Spec{Engine: "script", Cwd: f.work, Scenario: f.scenario}
	if on >= 0 {
		spec.Placement = &wire.Placement{Node: f.names[on]}
	}
	s, err := f.c(via).CreateSession(ctxFor(f.t), spec)
	if err != nil {
		f.t.Fatalf("create through %s: %v", f.names[via], err)
	}
	if s.Fleet == nil || s.Fleet.Node == "" || s.Fleet.Placement.Reason == "" {
		f.t.Fatalf("session %s has no place in the fleet: %+v", s.ID, s.Fleet)
	}
	return *s
}

// turn sends a message through node via and reads the session's events
// through node reader until the turn ends; it returns every line read.
func (f *testFleet) turn(id string, via, reader int, from int64, text string) []string {
	f.t.Helper()
	ctx := ctxFor(f.t)
	st, err := f.c(reader).Events(ctx, id, client.EventsOptions{From: from, Follow: true})
	if err != nil {
		f.t.Fatalf("events of %s through %s: %v", id, f.names[reader], err)
	}
	defer st.Close()
	if _, err := f.c(via).Command(ctx, id, command.Send{Text: text}); err != nil {
		f.t.Fatalf("send to %s through %s: %v", id, f.names[via], err)
	}
	var lines []string
	for {
		line, err := st.Next()
		if err != nil {
			f.t.Fatalf("events of %s through %s after %d: %v", id, f.names[reader], len(lines), err)
		}
		lines = append(lines, string(line))
		if bytes.Contains(line, []byte(`"type":"turnEnded"`)) {
			return lines
		}
	}
}

// logLine is one line of a supervisor's log about a session's runner.
type logLine struct {
	at      time.Time
	node    string
	msg     string
	session string
	fence   uint64
}

// runnerLog reads what node i logged of its sessions' claims: when it
// took one (before the runner starts) and when the runner was gone.
func (f *testFleet) runnerLog(i int) []logLine {
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(f.nodes[i].Log()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "\t", 5)
		if len(parts) < 4 || !strings.HasPrefix(parts[len(parts)-2], "fleet: claim") {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", parts[0])
		if err != nil {
			continue
		}
		var fields struct {
			Session string `json:"session"`
			Fence   uint64 `json:"fence"`
		}
		json.Unmarshal([]byte(parts[len(parts)-1]), &fields)
		out = append(out, logLine{at: at, node: f.names[i], msg: parts[len(parts)-2], session: fields.Session, fence: fields.Fence})
	}
	return out
}

// checkNeverLiveTwice fails if, by the nodes' logs, a session's runner was
// live on two nodes at once: each claim taken must come after the last
// one's release on another node.
func (f *testFleet) checkNeverLiveTwice() {
	f.t.Helper()
	var all []logLine
	for i := range f.nodes {
		lines := f.runnerLog(i)
		if at, ok := f.killed[f.names[i]]; ok {
			// Whatever it held was released when it died.
			held := map[string]bool{}
			for _, l := range lines {
				held[l.session] = l.msg == "fleet: claim taken"
			}
			for session, h := range held {
				if h {
					lines = append(lines, logLine{at: at, node: f.names[i], msg: "fleet: claim released", session: session})
				}
			}
		}
		all = append(all, lines...)
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].at.Before(all[j].at) })
	holder := map[string]string{}
	checked := 0
	for _, l := range all {
		switch l.msg {
		case "fleet: claim taken":
			if h := holder[l.session]; h != "" && h != l.node {
				f.t.Errorf("session %s taken by %s at %s while %s still held it", l.session, l.node, l.at.Format(time.StampMilli), h)
			}
			holder[l.session] = l.node
			checked++
		case "fleet: claim released":
			if holder[l.session] == l.node {
				delete(holder, l.session)
			}
		}
	}
	if checked == 0 {
		f.t.Error("no claim in the nodes' logs: nothing was checked")
	}
}
