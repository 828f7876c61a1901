package httpapi

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/wire"
)

// engines answers GET /v1/engines: the built-in engines, their models and
// settings, and whether a session on each could start.
func (s *server) engines(w http.ResponseWriter, r *http.Request) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		writeError(w, wire.Errorf(wire.CodeBadRequest, "query: %v", err))
		return
	}
	opts, err := enginesOptions(q)
	if err != nil {
		writeError(w, err)
		return
	}
	reply, err := s.m.Engines(r.Context(), opts)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, reply)
}

func enginesOptions(q url.Values) (supervisor.EnginesOptions, error) {
	var opts supervisor.EnginesOptions
	for name := range q {
		switch name {
		case "refresh", "check", "modelEndpoint":
		default:
			return opts, wire.Errorf(wire.CodeBadRequest, "unknown parameter %q (refresh, check, modelEndpoint)", name)
		}
	}
	if v := q.Get("refresh"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return opts, wire.Errorf(wire.CodeBadRequest, "refresh=%q: want true or false", v)
		}
		opts.Refresh = b
	}
	switch v := q.Get("check"); v {
	case "":
	case "accepted":
		opts.Accept = true
	default:
		return opts, wire.Errorf(wire.CodeBadRequest, "check=%q: the one check to ask for is accepted", v)
	}
	if v := q.Get("modelEndpoint"); v != "" {
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
			return opts, wire.Errorf(wire.CodeBadRequest, "modelEndpoint=%q: want an http or https URL without credentials", v)
		}
		opts.ModelEndpoint = v
	}
	return opts, nil
}
