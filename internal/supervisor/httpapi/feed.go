package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/corral-dev/corral/internal/supervisor"
	"github.com/corral-dev/corral/pkg/api"
)

// parseFeedQuery reads GET /v1/events's parameters: session and type
// (repeatable, or comma-separated), from (now, start, or a cursor) and the
// stream's format.
func parseFeedQuery(r *http.Request) (streamQuery, supervisor.FeedOptions, error) {
	var opts supervisor.FeedOptions
	q, err := parseStreamQuery(r)
	if err != nil {
		return q, opts, err
	}
	v := r.URL.Query()
	opts.Sessions = listParam(v["session"])
	opts.Types = listParam(v["type"])
	switch from := v.Get("from"); from {
	case "", "now":
	case "start":
		opts.FromStart = true
	default:
		opts.Cursor = from
	}
	// A reconnecting EventSource sends the last id it saw; it wins over
	// the from of the URL it reuses.
	if c := strings.TrimSpace(r.Header.Get("Last-Event-ID")); c != "" {
		opts.Cursor, opts.FromStart = c, false
	}
	return q, opts, nil
}

// listParam flattens repeated and comma-separated values.
func listParam(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, x := range strings.Split(v, ",") {
			if x = strings.TrimSpace(x); x != "" {
				out = append(out, x)
			}
		}
	}
	return out
}

// feed serves GET /v1/events: every session's events and lifecycle changes
// on one stream.
func (s *server) feed(w http.ResponseWriter, r *http.Request) {
	q, opts, err := parseFeedQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	f, err := s.m.Feed(r.Context(), opts)
	if err != nil {
		writeError(w, err)
		return
	}
	defer f.Close()
	var item []byte
	s.serveStream(w, r, q, "every session", f.Buffered, func(ctx context.Context, sw *streamWriter) error {
		ev, err := f.Next(ctx)
		if err != nil {
			return err
		}
		item = ev.AppendJSON(item[:0])
		return sw.write(ev.Cursor, ev.Type, item)
	}, func(sw *streamWriter, err error) {
		raw, _ := json.Marshal(api.FeedItem{Stream: &api.StreamMark{Type: api.MarkEnded, Error: api.NewError(err)}})
		sw.end(raw)
	})
}
