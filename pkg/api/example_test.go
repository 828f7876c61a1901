package api_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/corral-dev/corral/pkg/api"
)

// A shell reads GET /v1/sessions/{id} into a SessionReply.
func ExampleSessionReply() {
	body := `{"ok":true,"session":{"id":"3f2a9c0d1e4b","spec":{"id":"3f2a9c0d1e4b","engine":"script"},
	  "live":true,"status":{"session":"3f2a9c0d1e4b","engine":"script","state":"idle","turn":1,
	  "queued":[],"openAsks":[],"pendingEdits":[],"usage":{"inputTokens":0,"outputTokens":0,
	  "cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0,"estimated":true},"lastSeq":12},
	  "updatedAt":"2026-11-30T10:04:05Z"}}`
	var r api.SessionReply
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Session.ID, r.Session.Spec.Engine, r.Session.Live, r.Session.Status.State, r.Session.Status.LastSeq)
	// Output: 3f2a9c0d1e4b script true idle 12
}
