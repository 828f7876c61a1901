package httpapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// openFeed opens GET /v1/events with query and headers.
func (f *fixture) openFeed(query string, hdr ...string) *http.Response {
	f.t.Helper()
	req, _ := http.NewRequest("GET", f.srv.URL+"/v1/events"+query, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 {
		f.t.Fatalf("GET /v1/events%s: %d", query, resp.StatusCode)
	}
	return resp
}

func TestFeedOverSSE(t *testing.T) {
	f := newScriptFixture(t, "")
	resp := f.openFeed("")
	r := newSSEReader(resp.Body)
	id := f.create()
	f.send(id, "x")
	var items []sseEvent
	for {
		ev, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, ev)
		var it api.FeedItem
		if err := json.Unmarshal([]byte(ev.data), &it); err != nil {
			t.Fatalf("data %s: %v", ev.data, err)
		}
		if it.Cursor != ev.rawID || it.Session != id {
			t.Fatalf("item %s under id %q", ev.data, ev.rawID)
		}
		switch {
		case it.Event != nil:
			var e event.Event
			if json.Unmarshal(it.Event, &e) != nil || string(e.Type) != ev.event {
				t.Fatalf("event %s named %q", it.Event, ev.event)
			}
		case it.Lifecycle != nil:
			if string(it.Lifecycle.Type) != ev.event {
				t.Fatalf("lifecycle %s named %q", ev.data, ev.event)
			}
		default:
			t.Fatalf("item %s", ev.data)
		}
		if ev.event == "turnEnded" {
			break
		}
	}
	if r.retry != sseRetryMS {
		t.Errorf("retry %d", r.retry)
	}

	// Resume as an EventSource does: the rest, exactly.
	resumed := newSSEReader(f.openFeed("", "Last-Event-ID", items[2].rawID).Body)
	for i, want := range items[3:] {
		got, err := resumed.next()
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("resumed item %d: %+v, want %+v", i, got, want)
		}
	}
}

func TestFeedUnnamedAndNDJSON(t *testing.T) {
	f := newScriptFixture(t, "")
	id := f.create()
	f.send(id, "x")
	readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events", "", "turnEnded")

	// named=false: every message is an unnamed one, for onmessage.
	r := newSSEReader(f.openFeed("?from=start&named=false").Body)
	for {
		ev, err := r.next()
		if err != nil {
			t.Fatal(err)
		}
		if ev.event != "" {
			t.Fatalf("named=false sent a message named %q", ev.event)
		}
		if strings.Contains(ev.data, `"streamLive"`) {
			break
		}
	}

	// NDJSON: one item a line; the backlog, then the live mark.
	br := bufio.NewReader(f.openFeed("?from=start&format=ndjson&type=turnEnded").Body)
	var lines []string
	for len(lines) < 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, strings.TrimSuffix(line, "\n"))
	}
	var first, mark api.FeedItem
	json.Unmarshal([]byte(lines[0]), &first)
	json.Unmarshal([]byte(lines[1]), &mark)
	if first.Session != id || first.Cursor != "" || !strings.Contains(string(first.Event), `"turnEnded"`) {
		t.Fatalf("backlog line %s", lines[0])
	}
	if mark.Stream == nil || mark.Stream.Type != api.MarkLive || mark.Cursor == "" {
		t.Fatalf("mark line %s", lines[1])
	}
}

func TestFeedRejectsBadQueries(t *testing.T) {
	f := newScriptFixture(t, "")
	for _, q := range []string{"?session=../x", "?format=xml", "?named=maybe"} {
		code, raw := f.do("GET", "/v1/events"+q, "")
		if e := errorOf(t, code, raw); code != 400 || e.Code != wire.CodeBadRequest {
			t.Errorf("%s: %d %s", q, code, raw)
		}
	}
}

func TestWaitEndpoint(t *testing.T) {
	f := newScenarioFixture(t, "", `fallback: {steps: [{sleepMs: 600000}]}`)
	id := f.create()
	for _, q := range []string{"?for=lunch", "?timeout=0", "?timeout=11m", "?after=-1", "?timeout=soon"} {
		code, raw := f.do("GET", "/v1/sessions/"+id+"/wait"+q, "")
		if e := errorOf(t, code, raw); code != 400 || e.Code != wire.CodeBadRequest {
			t.Errorf("%s: %d %s", q, code, raw)
		}
	}
	if code, raw := f.do("GET", "/v1/sessions/000000000000/wait", ""); code != 404 {
		t.Errorf("unknown session: %d %s", code, raw)
	}
	f.send(id, "x")
	// A stop before the turn starts would only clear the queue.
	readSSE(t, f.srv.URL+"/v1/sessions/"+id+"/events", "", "turnStarted")
	code, raw := f.do("GET", "/v1/sessions/"+id+"/wait?for=idle&timeout=50ms", "")
	var r api.WaitReply
	if err := json.Unmarshal(raw, &r); code != 200 || err != nil || !r.OK || r.Met || r.For != api.WaitIdle {
		t.Fatalf("timed out wait: %d %s", code, raw)
	}
	code, raw = f.do("POST", "/v1/sessions/"+id+"/commands", `{"cmd":"stop"}`)
	if code != 200 {
		t.Fatalf("stop: %d %s", code, raw)
	}
	code, raw = f.do("GET", "/v1/sessions/"+id+"/wait?for=turnEnd&after=0", "")
	if err := json.Unmarshal(raw, &r); code != 200 || err != nil || !r.Met || len(r.Events) != 1 {
		t.Fatalf("turnEnd after 0: %d %s", code, raw)
	}
}
