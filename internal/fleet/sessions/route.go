package sessions

import (
	"context"
	"errors"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/corral-dev/corral/internal/fleet"
	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/internal/supervisor/httpapi"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/command"
	"github.com/corral-dev/corral/pkg/wire"
)

// routed is every session of the fleet, as the HTTP layer serves them:
// each request goes to the manager here when the session belongs to this
// node, else to its node over the fabric, and comes back with the same
// typed errors either way. Events of another node's session come from the
// fleet's event replica.
type routed struct {
	f *Fleet
	m *supervisor.Manager
}

var _ httpapi.Sessions = (*routed)(nil)

// route runs a request on session id's node: here through local, else as
// op over the fabric. A node that says the session is not its own any
// more (it moved meanwhile) gets the request once more at the session's
// new node.
func (r *routed) route(ctx context.Context, id, op string, req, res any, local func() error) error {
	rec, err := r.f.node.Record(ctx, id)
	if err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		if err := lost(rec); err != nil {
			return err
		}
		if rec.Node == r.f.node.Name() && !r.f.node.Holds(id) {
			// Not live here: this node's copy of the catalog could lag (it
			// was cut off a moment ago), and an answer from the session's
			// folder would then be another node's session's.
			fresh, ferr := r.f.node.Refresh(ctx, id)
			if ferr != nil {
				return ferr
			}
			if fresh.Node != rec.Node {
				rec = fresh
				continue
			}
		}
		if rec.Node == r.f.node.Name() {
			err = local()
		} else {
			err = r.f.node.Call(ctx, rec.Node, op, req, res)
		}
		if attempt > 0 || !errors.Is(err, wire.ErrConflict) {
			return err
		}
		// This node's copy of the catalog may lag (it was cut off a
		// moment ago): the fabric says where the session is now.
		fresh, ferr := r.f.node.Refresh(ctx, id)
		if ferr != nil || fresh.Node == rec.Node {
			return err
		}
		rec = fresh
	}
}

// lost is the error for a session whose node left the fleet.
func lost(rec fleet.Record) error {
	switch rec.State {
	case fleet.StateOrphaned:
		return wire.Errorf(wire.CodeUnavailable, "session %s lost its node %s, which left the fleet; another node is taking it over", rec.ID, lostFrom(rec))
	case fleet.StateFailed:
		msg := "no node in the fleet reaches its folder"
		if rec.Lost != nil && rec.Lost.Error != "" {
			msg = rec.Lost.Error
		}
		return wire.Errorf(wire.CodeUnavailable, "%s", msg)
	}
	return nil
}

func lostFrom(rec fleet.Record) string {
	if rec.Lost != nil {
		return rec.Lost.From
	}
	return rec.Node
}

// fleetView is a record as the session object shows it.
func fleetView(rec fleet.Record) *api.SessionFleet {
	v := &api.SessionFleet{
		Node:      rec.Node,
		Placement: api.FleetPlacement{Node: rec.Placement.Node, Reason: rec.Placement.Reason, Requested: rec.Placement.Requested},
		State:     rec.State,
		Moves:     rec.Moves,
	}
	if err := lost(rec); err != nil {
		v.Error = err.Error()
	}
	return v
}

// withFleet adds the session's place in the fleet to s.
func (r *routed) withFleet(ctx context.Context, s api.Session) api.Session {
	if rec, err := r.f.node.Record(ctx, s.ID); err == nil {
		s.Fleet = fleetView(rec)
	}
	return s
}

// unreachable is what is known of a session whose node does not answer.
func unreachable(rec fleet.Record, why error) api.Session {
	s := api.Session{ID: rec.ID, Spec: wire.Spec{ID: rec.ID, Engine: rec.Engine}, UpdatedAt: rec.CreatedAt, Fleet: fleetView(rec)}
	if s.Fleet.Error == "" && why != nil {
		s.Fleet.Error = why.Error()
	}
	return s
}

func (r *routed) LiveCount() int { return r.m.LiveCount() }
func (r *routed) Closing() bool  { return r.m.Closing() }

func (r *routed) Create(ctx context.Context, spec wire.Spec) (api.Session, error) {
	want := fleet.Want{Engine: spec.Engine}
	if p := spec.Placement; p != nil {
		want.Node, want.Labels = p.Node, p.Labels
	}
	spec.Placement = nil
	p, err := r.f.node.Place(want)
	if err != nil {
		return api.Session{}, err
	}
	if p.Node == r.f.node.Name() {
		return r.f.createHere(ctx, r.m, spec, p)
	}
	var s api.Session
	err = r.f.node.Call(ctx, p.Node, opCreate, createReq{Spec: spec, Placement: p}, &s)
	return s, err
}

// createHere creates a session placed on this node and records why.
func (f *Fleet) createHere(ctx context.Context, m *supervisor.Manager, spec wire.Spec, p fleet.Placement) (api.Session, error) {
	s, err := m.Create(ctx, spec)
	if err != nil {
		return s, err
	}
	// The claim registered it as made here; the record says how it came.
	rec, err := f.node.SetPlacement(ctx, s.ID, p)
	if err != nil {
		f.log.Warn("placement not recorded", logSession(s.ID), logErr(err))
		return s, nil
	}
	s.Fleet = fleetView(rec)
	return s, nil
}

func (r *routed) Get(ctx context.Context, id string) (api.Session, error) {
	rec, err := r.f.node.Record(ctx, id)
	if err != nil {
		return api.Session{}, err
	}
	if rec.State != "" {
		return unreachable(rec, nil), nil
	}
	var s api.Session
	err = r.route(ctx, id, opGet, idReq{ID: id}, &s, func() error {
		var err error
		s, err = r.m.Get(ctx, id)
		s = r.withFleet(ctx, s)
		return err
	})
	return s, err
}

// listChunk bounds the sessions one list request asks a node for, so its
// reply stays well under the fabric's message limit.
const listChunk = 100

func (r *routed) List(ctx context.Context) ([]api.Session, error) {
	byNode := map[string][]fleet.Record{}
	for _, rec := range r.f.node.Records() {
		byNode[rec.Node] = append(byNode[rec.Node], rec)
	}
	var mu sync.Mutex
	var out []api.Session
	add := func(s ...api.Session) {
		mu.Lock()
		out = append(out, s...)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for node, recs := range byNode {
		for start := 0; start < len(recs); start += listChunk {
			chunk := recs[start:min(len(recs), start+listChunk)]
			wg.Add(1)
			go func() {
				defer wg.Done()
				add(r.listOn(ctx, node, chunk)...)
			}()
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].UpdatedAt.Equal(out[j].UpdatedAt) {
			return out[i].UpdatedAt.After(out[j].UpdatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// listOn describes sessions of one node; what its node cannot tell is
// described from the catalog.
func (r *routed) listOn(ctx context.Context, node string, recs []fleet.Record) []api.Session {
	var ids []string
	var out []api.Session
	for _, rec := range recs {
		if rec.State != "" {
			out = append(out, unreachable(rec, nil))
		} else {
			ids = append(ids, rec.ID)
		}
	}
	if len(ids) == 0 {
		return out
	}
	if node == r.f.node.Name() {
		return append(out, r.f.describe(ctx, r.m, ids)...)
	}
	var reply listReply
	if err := r.f.node.Call(ctx, node, opList, listReq{IDs: ids}, &reply); err != nil {
		for _, rec := range recs {
			if rec.State == "" {
				out = append(out, unreachable(rec, err))
			}
		}
		return out
	}
	return append(out, reply.Sessions...)
}

// describe gets the sessions ids of this node; deleted ones are left out.
func (f *Fleet) describe(ctx context.Context, m *supervisor.Manager, ids []string) []api.Session {
	var out []api.Session
	for i, got := range m.GetMany(ctx, ids) {
		id, s, err := ids[i], got.Session, got.Err
		if errors.Is(err, wire.ErrNotFound) {
			continue
		}
		rec, rerr := f.node.Record(ctx, id)
		if err != nil {
			if rerr == nil {
				out = append(out, unreachable(rec, err))
			}
			continue
		}
		if rerr == nil {
			s.Fleet = fleetView(rec)
		}
		out = append(out, s)
	}
	return out
}

func (r *routed) Delete(ctx context.Context, id string) error {
	return r.route(ctx, id, opDelete, idReq{ID: id}, nil, func() error { return r.f.deleteHere(ctx, r.m, id) })
}

// deleteHere deletes a session of this node and forgets it in the fleet.
func (f *Fleet) deleteHere(ctx context.Context, m *supervisor.Manager, id string) error {
	if err := m.Delete(ctx, id); err != nil {
		return err
	}
	return f.node.Forget(ctx, id)
}

func (r *routed) Command(ctx context.Context, id string, req command.Request) (*wire.Reply, error) {
	// Encoded once, here: the owner decodes it as the HTTP layer does.
	raw, err := command.Marshal(req)
	if err != nil {
		return nil, wire.Errorf(wire.CodeBadRequest, "%v", err)
	}
	var reply *wire.Reply
	err = r.route(ctx, id, opCommand, commandReq{ID: id, Command: raw}, &reply, func() error {
		var err error
		reply, err = r.m.Command(ctx, id, req)
		return err
	})
	return reply, err
}

func (r *routed) Events(ctx context.Context, id string, from int64, follow bool) (httpapi.EventStream, error) {
	rec, err := r.f.node.Record(ctx, id)
	if err != nil {
		return nil, err
	}
	if rec.Node == r.f.node.Name() && rec.State == "" {
		s, err := r.m.Events(ctx, id, from, follow)
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	return r.f.node.Replay(ctx, id, from, follow)
}

func (r *routed) Feed(ctx context.Context, opts supervisor.FeedOptions) (httpapi.FeedStream, error) {
	return r.f.feed(ctx, opts)
}

// waitMargin is how much longer than the wait a caller waits for the
// answer of another node.
const waitMargin = 5 * time.Second

func (r *routed) Wait(ctx context.Context, id string, opts supervisor.WaitOptions) (api.WaitReply, error) {
	var reply api.WaitReply
	timeout := 30 * time.Second
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	// The node waits for the caller's timeout and answers Met false then;
	// the request itself is given a margin beyond it, and ends early only
	// when the caller leaves.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout+waitMargin)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		if errors.Is(ctx.Err(), context.Canceled) {
			cancel()
		}
	})
	defer stop()
	err := r.route(cctx, id, opWait, waitReq{ID: id, For: opts.For, After: opts.After, Timeout: timeout}, &reply, func() error {
		var err error
		reply, err = r.m.Wait(ctx, id, opts)
		return err
	})
	return reply, err
}

func (r *routed) WorkspaceStatus(ctx context.Context, id string) (*api.WorkspaceStatus, error) {
	var st *api.WorkspaceStatus
	err := r.route(ctx, id, opWorkspaceStatus, idReq{ID: id}, &st, func() error {
		var err error
		st, err = r.m.WorkspaceStatus(ctx, id)
		return err
	})
	return st, err
}

func (r *routed) WorkspaceCommit(ctx context.Context, id, message string) (string, error) {
	var commit string
	err := r.route(ctx, id, opWorkspaceCommit, commitReq{ID: id, Message: message}, &commit, func() error {
		var err error
		commit, err = r.m.WorkspaceCommit(ctx, id, message)
		return err
	})
	return commit, err
}

func (r *routed) WorkspaceMerge(ctx context.Context, id string) (*api.MergeResult, error) {
	var res *api.MergeResult
	err := r.route(ctx, id, opWorkspaceMerge, idReq{ID: id}, &res, func() error {
		var err error
		res, err = r.m.WorkspaceMerge(ctx, id)
		return err
	})
	return res, err
}

// Engines are this node's: what a session placed here could start on,
// with this node's settings and credentials.
func (r *routed) Engines(ctx context.Context, opts supervisor.EnginesOptions) (api.EnginesReply, error) {
	return r.m.Engines(ctx, opts)
}

// Terminals of this node's sessions are the manager's; another node's
// are bridged to it over the fabric (terms.go).

func (r *routed) OpenTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, error) {
	node, here, err := r.termNode(ctx, id)
	if err != nil {
		return nil, err
	}
	if here {
		return r.m.OpenTerm(ctx, id, t, sink)
	}
	return r.f.terms.open(ctx, node, id, t, sink)
}

func (r *routed) ExportTerm(ctx context.Context, id string, t wire.TermOpen, sink func(wire.Message)) (*wire.TermOpened, *os.File, error) {
	node, here, err := r.termNode(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if here {
		return r.m.ExportTerm(ctx, id, t, sink)
	}
	// A terminal on another machine cannot be handed over: it is attached.
	got, err := r.f.terms.open(ctx, node, id, t, sink)
	return got, nil, err
}

func (r *routed) termNode(ctx context.Context, id string) (string, bool, error) {
	rec, err := r.f.node.Record(ctx, id)
	if err != nil {
		return "", false, err
	}
	if err := lost(rec); err != nil {
		return "", false, err
	}
	return rec.Node, rec.Node == r.f.node.Name(), nil
}

func (r *routed) UnexportTerm(id, termID, clientID string, scrollback []byte) error {
	return r.m.UnexportTerm(id, termID, clientID, scrollback)
}

func (r *routed) TermInput(id string, in wire.TermInput) error {
	if b := r.f.terms.get(id, in.TermID, in.ClientID); b != nil {
		return b.input(in)
	}
	return r.m.TermInput(id, in)
}

func (r *routed) TermResize(id string, rs wire.TermResize) error {
	if b := r.f.terms.get(id, rs.TermID, rs.ClientID); b != nil {
		return b.resize(rs)
	}
	return r.m.TermResize(id, rs)
}

func (r *routed) TermAck(id string, a wire.TermAck) error {
	if b := r.f.terms.get(id, a.TermID, a.ClientID); b != nil {
		return b.ack(a)
	}
	return r.m.TermAck(id, a)
}

func (r *routed) CloseTerm(id, termID, clientID string) error {
	if b := r.f.terms.get(id, termID, clientID); b != nil {
		return b.close()
	}
	return r.m.CloseTerm(id, termID, clientID)
}

func (r *routed) RecycleTermData(p []byte) { r.m.RecycleTermData(p) }
func (r *routed) TermBuffer(n int) []byte  { return r.m.TermBuffer(n) }
