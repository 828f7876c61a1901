package engineprobe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/corral-dev/corral/internal/transcript"
)

func TestServeReplayReportsWhatTheReplayFound(t *testing.T) {
	replays := map[string]Replay{
		"same": func(context.Context, ReplayRequest, []string) (string, error) { return "1.0.0", nil },
		"drifted": func(context.Context, ReplayRequest, []string) (string, error) {
			return "1.0.1", errors.New("frame 2 differs")
		},
		"new": func(context.Context, ReplayRequest, []string) (string, error) {
			return "1.1.0", fmt.Errorf("%w (1.1.0)", transcript.ErrNoGolden)
		},
	}
	cases := []struct {
		request string
		want    ReplayReply
	}{
		{`{"engine":"same"}`, ReplayReply{Engine: "same", Version: "1.0.0", OK: true}},
		{`{"engine":"drifted"}`, ReplayReply{Engine: "drifted", Version: "1.0.1", Error: "frame 2 differs"}},
		{`{"engine":"new"}`, ReplayReply{Engine: "new", Version: "1.1.0", NoGolden: true, Error: transcript.ErrNoGolden.Error() + " (1.1.0)"}},
		{`{"engine":"other"}`, ReplayReply{Engine: "other", Unknown: true, Error: "this runner cannot replay the other engine's golden turn (it replays: drifted, new, same)"}},
	}
	for _, tc := range cases {
		t.Run(tc.request, func(t *testing.T) {
			var out bytes.Buffer
			if err := ServeReplay(context.Background(), replays, nil, strings.NewReader(tc.request), &out); err != nil {
				t.Fatal(err)
			}
			var got ReplayReply
			if err := json.Unmarshal(out.Bytes(), &got); err != nil || got != tc.want {
				t.Fatalf("reply %+v (%v), want %+v", got, err, tc.want)
			}
		})
	}
	if err := ServeReplay(context.Background(), replays, nil, strings.NewReader(`{"engine":"same","extra":1}`), &bytes.Buffer{}); err == nil {
		t.Fatal("a request with an unknown field was taken")
	}
}
