package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// Bounds of a wait's timeout.
const (
	defaultWait = 30 * time.Second
	maxWait     = 10 * time.Minute
)

// parseWaitQuery reads for, after and timeout.
func parseWaitQuery(r *http.Request) (supervisor.WaitOptions, time.Duration, error) {
	v := r.URL.Query()
	opts := supervisor.WaitOptions{For: api.WaitFor(v.Get("for"))}
	if opts.For == "" {
		opts.For = api.WaitIdle
	}
	if s := v.Get("after"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return opts, 0, wire.Errorf(wire.CodeBadRequest, "after=%q: want a seq, a whole number >= 0", s)
		}
		opts.After = &n
	}
	timeout := defaultWait
	if s := v.Get("timeout"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			secs, nerr := strconv.ParseFloat(s, 64)
			if nerr != nil {
				return opts, 0, wire.Errorf(wire.CodeBadRequest, "timeout=%q: want a duration (30s, 5m) or seconds", s)
			}
			d = time.Duration(secs * float64(time.Second))
		}
		if d <= 0 || d > maxWait {
			return opts, 0, wire.Errorf(wire.CodeBadRequest, "timeout=%q: want more than 0 and at most %s", s, maxWait)
		}
		timeout = d
	}
	return opts, timeout, nil
}

// wait serves GET /v1/sessions/{id}/wait: a long poll that answers when the
// session's turn ends, it needs a person, or it is idle.
func (s *server) wait(w http.ResponseWriter, r *http.Request) {
	opts, timeout, err := parseWaitQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	reply, err := s.m.Wait(ctx, r.PathValue("id"), opts)
	if err != nil {
		writeError(w, err)
		return
	}
	if r.Context().Err() != nil {
		return // the client left
	}
	writeJSON(w, http.StatusOK, reply)
}
