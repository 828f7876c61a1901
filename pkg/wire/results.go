package wire

// Results of the control commands that have a type of their own (the
// others answer with an event's data: stop with StoppedData, decideHunk
// with HunkDecidedData, setMode with ModeChangedData, setSpendCap with
// SpendCapSetData, setGoal with GoalSetData, markGoalDone with
// GoalCheckData; send and cancelQueued with the Queued message; status
// with Status).

// SteerResult is the result of steer: how the steer was taken.
type SteerResult struct {
	// Delivery is "native" (handed to the engine at once), "boundary"
	// (waiting for the next tool boundary) or "queued" (no turn was
	// running, so it became a send).
	Delivery string `json:"delivery"`
	// MessageID is set when the steer was queued as a send.
	MessageID string `json:"messageId,omitempty"`
}

// AnswerResult is the result of answer.
type AnswerResult struct {
	AskID    string `json:"askId"`
	Decision string `json:"decision"`
}

// GoalState is the result of getGoal.
type GoalState struct {
	// Goal is the goal's text; empty without a goal.
	Goal    string   `json:"goal,omitempty"`
	Clauses []string `json:"clauses"`
	// Done is set once the goal was marked done (markGoalDone).
	Done bool `json:"done"`
	// Attempts counts goal checks in a row since the last human message.
	Attempts int `json:"attempts"`
	// Limit is how many goal checks in a row may run (goalLimit).
	Limit int `json:"limit"`
}

// ClearGoalResult is the result of clearGoal.
type ClearGoalResult struct {
	Cleared bool `json:"cleared"`
}

// ForkResult is the result of forkSession: the session continues as To;
// From is left closed at the branch point.
type ForkResult struct {
	From string `json:"from"`
	To   string `json:"to"`
}
