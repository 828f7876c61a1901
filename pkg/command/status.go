package command

import (
	"github.com/corral-dev/corral/pkg/event"
	"github.com/corral-dev/corral/pkg/wire"
)

// Status is the result of the status command and the body of presence.json.
type Status struct {
	Session     string          `json:"session"`
	Title       string          `json:"title,omitempty"`
	Engine      string          `json:"engine"`
	State       wire.State      `json:"state"`
	Activity    string          `json:"activity,omitempty"`
	Mode        string          `json:"mode,omitempty"`
	Turn        int             `json:"turn"`
	Queued      []event.Queued  `json:"queued"`
	OpenAsks    []string        `json:"openAsks"`
	PendingEdit []string        `json:"pendingEdits"`
	Goal        string          `json:"goal,omitempty"`
	Usage       event.UsageData `json:"usage"`
	LastSeq     int64           `json:"lastSeq"`
	SpendCapUSD float64         `json:"spendCapUsd,omitempty"`
	// Held says the spend cap is reached: no turn starts, and the queued
	// messages wait, until the cap is raised past what was spent
	// (setSpendCap). With messages queued the session waits for a person.
	Held       bool `json:"held,omitempty"`
	Unattended bool `json:"unattended,omitempty"`
}
