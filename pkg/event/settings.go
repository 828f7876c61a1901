package event

// QueueChange says what changed a session's queue.
type QueueChange string

// Queue changes.
const (
	QueueAdded     QueueChange = "added"     // a message was queued
	QueueStarted   QueueChange = "started"   // the first message left the queue: its turn starts
	QueueCancelled QueueChange = "cancelled" // cancelQueued removed a message
	QueueCleared   QueueChange = "cleared"   // a stop emptied the queue
)

// QueueChangedData is the data of queueChanged, emitted whenever the queue
// of messages waiting for a turn changes.
type QueueChangedData struct {
	Change QueueChange `json:"change"`
	// MessageID is the message added, started or cancelled (none for
	// cleared).
	MessageID string `json:"messageId,omitempty"`
	// Queued is the whole queue after the change, oldest first.
	Queued []Queued `json:"queued"`
}

// ModeChangedData is the data of modeChanged, and the result of setMode.
type ModeChangedData struct {
	Mode string `json:"mode"`
}

// SpendCapSetData is the data of spendCapSet, and the result of
// setSpendCap.
type SpendCapSetData struct {
	SpendCapUSD float64 `json:"spendCapUsd"`
}

// Queued is a send waiting for the running turn to end.
type Queued struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}
