package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/wire"
	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// A terminal of another node's session is bridged: its WebSocket client is
// here (the front), its program runs there (the owner). The front asks the
// owner to open the terminal for it (term.open), naming a subject of its
// own where the owner sends the output; the owner names the subject where
// the front sends keystrokes, resizes, acknowledgements and its close.
// Output is the runner's, as the manager's sink gets it; flow control is
// the runner's own (the front's fan-out acknowledges what its clients
// took), so at most a window of output is on its way at any time. The
// front pings the owner; a bridge whose front fell silent is closed by the
// owner, one whose owner stopped answering is ended at the front with an
// error.

const (
	hdrTerm = "Corral-Term" // what a bridge message carries

	// Front to owner.
	termInput  = "input"  // the keystrokes, raw
	termResize = "resize" // a wire.TermResize
	termAck    = "ack"    // a wire.TermAck
	termClose  = "close"
	termPing   = "ping" // a request: the owner answers while it holds the bridge
	// Owner to front.
	termData = "data" // output, raw
	termMsg  = "msg"  // term.exit or term.error, as its protocol line (wire.AppendMessage)

	bridgePing = 5 * time.Second
	bridgeIdle = 4 * bridgePing
)

type termOpenReq struct {
	ID     string        `json:"id"`
	Term   wire.TermOpen `json:"term"`
	Bridge string        `json:"bridge"`
	// Out is the subject the front reads the terminal's output from.
	Out string `json:"out"`
}

type termOpenReply struct {
	Term *wire.TermOpened `json:"term"`
	// In is the subject the owner reads the front's messages from.
	In string `json:"in"`
}

type termKey struct{ session, term, client string }

// bridges are this node's bridged terminals, on both sides.
type bridges struct {
	f *Fleet

	mu     sync.Mutex
	front  map[termKey]*frontBridge
	owner  map[string]*ownerBridge // by bridge id
	closed bool
	stop   chan struct{}
	wg     sync.WaitGroup
}

func newBridges(f *Fleet) *bridges {
	b := &bridges{f: f, front: map[termKey]*frontBridge{}, owner: map[string]*ownerBridge{}, stop: make(chan struct{})}
	b.wg.Add(1)
	go b.reapIdle()
	return b
}

func (b *bridges) get(session, term, client string) *frontBridge {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.front[termKey{session, term, client}]
}

// frontBridge is this node's end of a terminal whose session runs on
// another node.
type frontBridge struct {
	b    *bridges
	key  termKey
	node string
	sink func(wire.Message)
	sub  *nats.Subscription
	in   string
	done chan struct{}
	once sync.Once
}

// open bridges a terminal of session id on node to sink.
func (b *bridges) open(ctx context.Context, node, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, error) {
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	bridge := hex.EncodeToString(raw[:])
	fleetNode := b.f.node
	fb := &frontBridge{b: b, key: termKey{id, t.TermID, t.ClientID}, node: node, sink: sink, done: make(chan struct{})}
	out := fleetNode.TermSubject(fleetNode.Name(), bridge, "out")
	sub, err := b.f.nc.Subscribe(out, fb.deliver)
	if err == nil {
		// The servers know where output goes before the owner sends any.
		err = b.f.nc.Flush()
	}
	if err != nil {
		if sub != nil {
			sub.Unsubscribe()
		}
		return nil, wire.Errorf(wire.CodeUnavailable, "bridge terminal %s to node %s: %v", t.TermID, node, err)
	}
	fb.sub = sub
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		sub.Unsubscribe()
		return nil, wire.Errorf(wire.CodeUnavailable, "the supervisor is leaving the fleet")
	}
	b.front[fb.key] = fb
	b.mu.Unlock()
	var reply termOpenReply
	if err := fleetNode.Call(ctx, node, opTermOpen, termOpenReq{ID: id, Term: t, Bridge: bridge, Out: out}, &reply); err != nil {
		fb.end()
		return nil, err
	}
	if reply.Term == nil || reply.In == "" {
		fb.end()
		return nil, wire.Errorf(wire.CodeProtocol, "node %s opened terminal %s without saying how to reach it", node, t.TermID)
	}
	b.mu.Lock()
	fb.in = reply.In
	b.mu.Unlock()
	b.wg.Add(1)
	go fb.keepAlive()
	return reply.Term, nil
}

// deliver hands the owner's messages to the sink, in order.
func (fb *frontBridge) deliver(m *nats.Msg) {
	switch m.Header.Get(hdrTerm) {
	case termData:
		fb.sink(&wire.TermData{TermID: fb.key.term, ClientID: fb.key.client, Data: m.Data})
	case termMsg:
		msg, _, err := wire.Unmarshal(m.Data)
		if err != nil {
			return
		}
		// The terminal is this bridge's, whatever the message says.
		switch msg := msg.(type) {
		case *wire.TermExit:
			msg.TermID, msg.ClientID = fb.key.term, fb.key.client
			fb.sink(msg)
		case *wire.TermError:
			msg.TermID, msg.ClientID = fb.key.term, fb.key.client
			fb.sink(msg)
		}
	}
}

func (fb *frontBridge) inSubject() string {
	fb.b.mu.Lock()
	defer fb.b.mu.Unlock()
	return fb.in
}

// input passes the client's keystrokes to the owner.
func (fb *frontBridge) input(in wire.TermInput) error { return fb.send(termInput, in.Data) }

// resize passes the client's new size to the owner.
func (fb *frontBridge) resize(r wire.TermResize) error {
	body, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return fb.send(termResize, body)
}

// ack passes on how much output the client took.
func (fb *frontBridge) ack(a wire.TermAck) error {
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	return fb.send(termAck, body)
}

// send passes a message of the client's to the owner.
func (fb *frontBridge) send(kind string, body []byte) error {
	in := fb.inSubject()
	if in == "" {
		return wire.Errorf(wire.CodeUnavailable, "terminal %s is still opening", fb.key.term)
	}
	msg := nats.NewMsg(in)
	msg.Header.Set(hdrTerm, kind)
	msg.Data = body
	if err := fb.b.f.nc.PublishMsg(msg); err != nil {
		return wire.Errorf(wire.CodeUnavailable, "terminal %s on node %s: %v", fb.key.term, fb.node, err)
	}
	return nil
}

// close detaches the client: the owner closes its side.
func (fb *frontBridge) close() error {
	err := fb.send(termClose, nil)
	fb.end()
	return err
}

func (fb *frontBridge) end() {
	fb.once.Do(func() {
		fb.sub.Unsubscribe()
		fb.b.mu.Lock()
		if fb.b.front[fb.key] == fb {
			delete(fb.b.front, fb.key)
		}
		fb.b.mu.Unlock()
		close(fb.done)
	})
}

// keepAlive pings the owner; when it stops answering, the client hears of
// it as the end of the terminal.
func (fb *frontBridge) keepAlive() {
	defer fb.b.wg.Done()
	t := time.NewTicker(bridgePing)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-fb.done:
			return
		case <-fb.b.stop:
			return
		case <-t.C:
		}
		msg := nats.NewMsg(fb.inSubject())
		msg.Header.Set(hdrTerm, termPing)
		_, err := fb.b.f.nc.RequestMsg(msg, bridgePing)
		if err == nil {
			misses = 0
			continue
		}
		if misses++; misses < 2 {
			continue
		}
		fb.sink(&wire.TermError{TermID: fb.key.term, ClientID: fb.key.client,
			Error: wire.Errorf(wire.CodeUnavailable, "node %s, where terminal %s runs, stopped answering: %v", fb.node, fb.key.term, err)})
		fb.end()
		return
	}
}

// ownerBridge is this node's end of a terminal of its own session whose
// client is on another node.
type ownerBridge struct {
	b       *bridges
	id      string
	session string
	term    string
	client  string
	out     string
	m       *supervisor.Manager
	sub     *nats.Subscription

	mu   sync.Mutex
	last time.Time // the front's last message
	once sync.Once
}

// serveOpen opens a terminal of session id for a client on another node.
func (b *bridges) serveOpen(ctx context.Context, m *supervisor.Manager, id string, req termOpenReq) (termOpenReply, error) {
	if !validBridge(req.Bridge) || req.Term.TermID == "" {
		return termOpenReply{}, wire.Errorf(wire.CodeBadRequest, "term.open: a bridge id and a terminal id are needed")
	}
	fleetNode := b.f.node
	ob := &ownerBridge{b: b, id: req.Bridge, session: id, term: req.Term.TermID, client: req.Term.ClientID, out: req.Out, m: m, last: time.Now()}
	in := fleetNode.TermSubject(fleetNode.Name(), req.Bridge, "in")
	sub, err := b.f.nc.Subscribe(in, ob.handle)
	if err == nil {
		err = b.f.nc.Flush()
	}
	if err != nil {
		if sub != nil {
			sub.Unsubscribe()
		}
		return termOpenReply{}, wire.Errorf(wire.CodeUnavailable, "bridge terminal %s: %v", req.Term.TermID, err)
	}
	ob.sub = sub
	b.mu.Lock()
	if b.closed || b.owner[req.Bridge] != nil {
		b.mu.Unlock()
		sub.Unsubscribe()
		return termOpenReply{}, wire.Errorf(wire.CodeConflict, "bridge %s is taken, or the supervisor is leaving", req.Bridge)
	}
	b.owner[req.Bridge] = ob
	b.mu.Unlock()
	got, err := m.OpenTerm(ctx, id, req.Term, ob.sink)
	if err != nil {
		ob.end(false)
		return termOpenReply{}, err
	}
	return termOpenReply{Term: got, In: in}, nil
}

func validBridge(id string) bool {
	if len(id) != 16 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

// sink sends the runner's messages for this client to the front. It runs
// on the runner's reader: publishing only buffers.
func (ob *ownerBridge) sink(msg wire.Message) {
	out := nats.NewMsg(ob.out)
	if d, ok := msg.(*wire.TermData); ok {
		out.Header.Set(hdrTerm, termData)
		out.Data = d.Data
		ob.b.f.nc.PublishMsg(out) // copies the data into the connection's buffer
		ob.m.RecycleTermData(d.Data)
		return
	}
	line, err := wire.AppendMessage(nil, "", msg)
	if err != nil {
		ob.b.f.log.Warn("bridged terminal message not encoded", zap.String("session", ob.session), zap.Error(err))
		return
	}
	out.Header.Set(hdrTerm, termMsg)
	out.Data = line
	ob.b.f.nc.PublishMsg(out)
}

// handle serves the front's messages.
func (ob *ownerBridge) handle(m *nats.Msg) {
	ob.mu.Lock()
	ob.last = time.Now()
	ob.mu.Unlock()
	var err error
	switch m.Header.Get(hdrTerm) {
	case termInput:
		err = ob.m.TermInput(ob.session, wire.TermInput{TermID: ob.term, ClientID: ob.client, Data: m.Data})
	case termResize:
		var r wire.TermResize
		if json.Unmarshal(m.Data, &r) != nil {
			return
		}
		// Only what the message may change; the terminal is the bridge's.
		err = ob.m.TermResize(ob.session, wire.TermResize{TermID: ob.term, ClientID: ob.client, Cols: r.Cols, Rows: r.Rows})
	case termAck:
		var a wire.TermAck
		if json.Unmarshal(m.Data, &a) != nil {
			return
		}
		err = ob.m.TermAck(ob.session, wire.TermAck{TermID: ob.term, ClientID: ob.client, Acked: a.Acked})
	case termClose:
		ob.end(true)
	case termPing:
		m.Respond([]byte("ok"))
	}
	if err != nil {
		ob.b.f.log.Debug("bridged terminal message not delivered", zap.String("session", ob.session), zap.Error(err))
	}
}

// end closes this side of the bridge, and the terminal's client at the
// runner when detach.
func (ob *ownerBridge) end(detach bool) {
	ob.once.Do(func() {
		ob.sub.Unsubscribe()
		ob.b.mu.Lock()
		if ob.b.owner[ob.id] == ob {
			delete(ob.b.owner, ob.id)
		}
		ob.b.mu.Unlock()
		if detach {
			ob.m.CloseTerm(ob.session, ob.term, ob.client)
		}
	})
}

// reapIdle closes the owner's side of bridges whose front fell silent.
func (b *bridges) reapIdle() {
	defer b.wg.Done()
	t := time.NewTicker(bridgeIdle / 4)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
		}
		b.mu.Lock()
		var idle []*ownerBridge
		for _, ob := range b.owner {
			ob.mu.Lock()
			if time.Since(ob.last) > bridgeIdle {
				idle = append(idle, ob)
			}
			ob.mu.Unlock()
		}
		b.mu.Unlock()
		for _, ob := range idle {
			b.f.log.Info("closing a bridged terminal whose client's node fell silent", zap.String("session", ob.session), zap.String("term", ob.term))
			ob.end(true)
		}
	}
}

// closeAll ends every bridge, at the front with an error for the client.
func (b *bridges) closeAll() {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return
	}
	b.closed = true
	var fronts []*frontBridge
	for _, fb := range b.front {
		fronts = append(fronts, fb)
	}
	var owners []*ownerBridge
	for _, ob := range b.owner {
		owners = append(owners, ob)
	}
	b.mu.Unlock()
	close(b.stop)
	for _, fb := range fronts {
		fb.sink(&wire.TermError{TermID: fb.key.term, ClientID: fb.key.client,
			Error: wire.Errorf(wire.CodeUnavailable, "the supervisor is shutting down")})
		fb.end()
	}
	for _, ob := range owners {
		ob.end(true)
	}
	b.wg.Wait()
}
