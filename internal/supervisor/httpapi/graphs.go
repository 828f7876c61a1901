package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/graphapi"
	"github.com/corral-dev/corral/internal/graph/service"
	"github.com/corral-dev/corral/pkg/wire"
)

// graphPoll is how often a followed graph event stream looks for new
// events: several processes write a run's events, so the file is the only
// place to learn of them.
const graphPoll = 100 * time.Millisecond

// graphs serves /v1/graphs: graph runs over sessions (docs/graph.md). The
// supervisor runs their nodes in its own sessions.
type graphs struct {
	s   *server
	svc *service.Service
}

func newGraphs(s *server, svc *service.Service) *graphs {
	return &graphs{s: s, svc: svc}
}

func writeGraphError(w http.ResponseWriter, err error) {
	e := graphapi.ToError(err)
	writeJSON(w, e.StatusCode, graphapi.ErrorReply{Error: e})
}

// enabled answers for a supervisor built without graph runs.
func (g *graphs) enabled(w http.ResponseWriter) bool {
	if g.svc == nil {
		writeError(w, wire.Errorf(wire.CodeUnavailable, "this supervisor serves no graph runs"))
		return false
	}
	return true
}

func (g *graphs) open(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	var req graphapi.OpenRequest
	if err := decodeBody(w, r, &req); err != nil {
		writeError(w, err)
		return
	}
	out, err := g.svc.Open(r.Context(), req)
	if err != nil {
		writeGraphError(w, err)
		return
	}
	w.Header().Set("Location", "/v1/graphs/"+out.RunID)
	writeJSON(w, http.StatusCreated, graphapi.OpenResponse{OK: true, OpenReply: *out})
}

func (g *graphs) list(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	out, err := g.svc.Status(r.Context(), graphapi.StatusRequest{})
	if err != nil {
		writeGraphError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, graphapi.StatusResponse{OK: true, StatusReply: *out})
}

func (g *graphs) status(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	out, err := g.svc.Status(r.Context(), graphapi.StatusRequest{RunID: r.PathValue("run")})
	if err != nil {
		writeGraphError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, graphapi.StatusResponse{OK: true, StatusReply: *out})
}

func (g *graphs) next(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	out, err := g.svc.Next(r.Context(), graphapi.RunRef{RunID: r.PathValue("run")})
	if err != nil {
		writeGraphError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, graphapi.NextResponse{OK: true, NextReply: *out})
}

// run runs a node to its verdict; the request lasts as long as the node.
func (g *graphs) run(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	v, err := g.svc.Run(r.Context(), graphapi.NodeRef{RunID: r.PathValue("run"), Node: r.PathValue("node")})
	if err != nil {
		writeGraphError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, graphapi.VerdictResponse{OK: true, Verdict: v})
}

func (g *graphs) submit(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	var body graphapi.SubmitBody
	if err := decodeBody(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	v, err := g.svc.Submit(r.Context(), graphapi.SubmitRequest{RunID: r.PathValue("run"), Node: r.PathValue("node"), Claim: body.Claim, Result: body.Result})
	if err != nil {
		writeGraphError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, graphapi.VerdictResponse{OK: true, Verdict: v})
}

func (g *graphs) retry(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	var body graphapi.RetryBody
	if err := decodeBody(w, r, &body); err != nil {
		writeError(w, err)
		return
	}
	out, err := g.svc.Retry(r.Context(), graphapi.RetryRequest{RunID: r.PathValue("run"), Subgoal: body.Subgoal})
	if err != nil {
		writeGraphError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, graphapi.RetryResponse{OK: true, RetryReply: *out})
}

// events streams a run's graph events (SSE, or NDJSON), from seq from; a
// followed stream ends after the event that ends the run.
func (g *graphs) events(w http.ResponseWriter, r *http.Request) {
	if !g.enabled(w) {
		return
	}
	q, err := parseEventsQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	run := r.PathValue("run")
	st := g.svc.Store()
	batch, offset, err := st.EventsFrom(run, 0)
	if err != nil {
		writeGraphError(w, err)
		return
	}
	var pending []graph.RunEvent
	take := func(batch []graph.RunEvent) {
		for _, e := range batch {
			if e.Seq >= q.from {
				pending = append(pending, e)
			}
		}
	}
	take(batch)
	// A run that has ended has nothing more to follow.
	ended := false
	if r, err := st.Load(run); err == nil && r.State != graph.RunOpen {
		ended = true
	}
	var idBuf []byte
	g.s.serveStream(w, r, q.streamQuery, "graph run "+run, func() bool { return len(pending) > 0 },
		func(ctx context.Context, sw *streamWriter) error {
			for len(pending) == 0 {
				if ended || !q.follow {
					return io.EOF
				}
				if err := st.Clock().Sleep(ctx, graphPoll); err != nil {
					return err
				}
				if batch, offset, err = st.EventsFrom(run, offset); err != nil {
					return err
				}
				take(batch)
			}
			e := pending[0]
			pending = pending[1:]
			ended = e.Type == graph.EvRunComplete || e.Type == graph.EvRunBlocked
			line, _ := json.Marshal(e)
			idBuf = strconv.AppendInt(idBuf[:0], e.Seq, 10)
			return sw.write(idBuf, []byte(e.Type), line)
		},
		func(sw *streamWriter, err error) {
			raw, _ := json.Marshal(graphapi.ErrorReply{Error: graphapi.ToError(err)})
			sw.end(raw)
		})
}
