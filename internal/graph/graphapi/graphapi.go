// Package graphapi holds the requests and replies of the graph operations
// (open, next, run, submit, retry, status), shared by the supervisor's
// /v1/graphs routes, the CLI's --json output and the MCP server's tools,
// whose input schemas are generated from these types. docs/graph.md and
// docs/mcp.md are the reference.
package graphapi

import (
	"encoding/json"
	"errors"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// OpenRequest opens a run on a request.
type OpenRequest struct {
	// RunID names the run; empty lets Corral pick one. A caller that
	// names it can retry an open safely: a second open of the same id is
	// run_exists.
	RunID   string       `json:"runId,omitempty" jsonschema:"the run's id (letters, digits, _ and -; empty: Corral picks one)"`
	Request string       `json:"request" jsonschema:"the request the run carries out, as the person asked it"`
	Cwd     string       `json:"cwd,omitempty" jsonschema:"absolute path of the worktree the run works in (default: the server's working directory)"`
	Policy  graph.Policy `json:"policy,omitzero" jsonschema:"routing and limits: engines per stage, attempts, isolation"`
}

// OpenReply is the new run and its first ready nodes.
type OpenReply struct {
	RunID string         `json:"runId"`
	State graph.RunState `json:"state"`
	Ready []NextNode     `json:"ready"`
}

// RunRef names a run.
type RunRef struct {
	RunID string `json:"runId" jsonschema:"the run's id"`
}

// NextNode is a node that may run now, and how it would be routed.
type NextNode struct {
	Node    string       `json:"node"`
	Stage   graph.Stage  `json:"stage"`
	Subgoal string       `json:"subgoal,omitempty"`
	Route   *graph.Route `json:"route"`
}

// NextReply lists what may run now, what runs, and what is blocked.
type NextReply struct {
	RunID   string          `json:"runId"`
	State   graph.RunState  `json:"state"`
	Ready   []NextNode      `json:"ready"`
	Running []graph.Running `json:"running"`
	Blocked []graph.Blocked `json:"blocked"`
}

// NodeRef names a node of a run.
type NodeRef struct {
	RunID string `json:"runId" jsonschema:"the run's id"`
	Node  string `json:"node" jsonschema:"the node's id, e.g. plan, implement:U1, gate:U1:2"`
}

// SubmitRequest submits the result of a node the caller ran itself.
type SubmitRequest struct {
	RunID string `json:"runId" jsonschema:"the run's id"`
	Node  string `json:"node" jsonschema:"the node's id"`
	// Claim is the token graph_run returned for a node routed to self;
	// empty claims a pending node in the same step.
	Claim string `json:"claim,omitempty" jsonschema:"the claim token graph_run gave for a node routed to self"`
	// Result is the node's result object (docs/graph.md, Results).
	Result json.RawMessage `json:"result" jsonschema:"the node's result object: summary, verdict, reason, gaps, checks, changedFiles, evidence, handoff, plan, subgoals, problems, blame, report as its stage needs"`
}

// RetryRequest retries a failure.
type RetryRequest struct {
	RunID string `json:"runId" jsonschema:"the run's id"`
	// Subgoal is the subgoal to retry; empty retries the spec (plan,
	// setgoal, critique, or the goal gate); "report" retries the report.
	Subgoal string `json:"subgoal,omitempty" jsonschema:"the subgoal to retry; empty: the spec; report: the report"`
}

// RetryReply is what the retry did and what may run next.
type RetryReply struct {
	graph.RetryOutcome
	State graph.RunState `json:"state"`
	Ready []NextNode     `json:"ready"`
}

// StatusRequest asks for one run, or every run.
type StatusRequest struct {
	RunID string `json:"runId,omitempty" jsonschema:"the run's id; empty: every run"`
}

// StatusReply is one run's status or every run's summary.
type StatusReply struct {
	Run  *graph.RunStatus `json:"run,omitempty"`
	Runs []graph.Summary  `json:"runs,omitempty"`
}

// The bodies of the /v1/graphs routes' successful replies: each
// operation's reply with "ok": true (docs/api.md).
type (
	// OpenResponse answers POST /v1/graphs.
	OpenResponse struct {
		OK bool `json:"ok"`
		OpenReply
	}
	// NextResponse answers GET /v1/graphs/{run}/next.
	NextResponse struct {
		OK bool `json:"ok"`
		NextReply
	}
	// VerdictResponse answers a node's run or submit.
	VerdictResponse struct {
		OK      bool           `json:"ok"`
		Verdict *graph.Verdict `json:"verdict"`
	}
	// RetryResponse answers POST /v1/graphs/{run}/retry.
	RetryResponse struct {
		OK bool `json:"ok"`
		RetryReply
	}
	// StatusResponse answers GET /v1/graphs and GET /v1/graphs/{run}.
	StatusResponse struct {
		OK bool `json:"ok"`
		StatusReply
	}
)

// SubmitBody is the body of POST /v1/graphs/{run}/nodes/{node}/submit.
type SubmitBody struct {
	// Claim is the token a run gave for a node routed to self; empty
	// claims a pending node in the same step.
	Claim string `json:"claim,omitempty"`
	// Result is the node's result object (docs/graph.md, Results).
	Result json.RawMessage `json:"result"`
}

// RetryBody is the body of POST /v1/graphs/{run}/retry.
type RetryBody struct {
	// Subgoal is the subgoal to retry; empty retries the spec, "report"
	// the report.
	Subgoal string `json:"subgoal,omitempty"`
}

// ErrorBody is a failed graph operation as the HTTP API and the MCP
// server report it: the supervisor's error shape, plus the graph code and
// the node.
type ErrorBody struct {
	Message    string    `json:"message"`
	Code       wire.Code `json:"code"`
	StatusCode int       `json:"statusCode"`
	// GraphCode is the graph's own code (deps_unmet, node_running, …).
	GraphCode graph.Code `json:"graphCode,omitempty"`
	Node      string     `json:"node,omitempty"`
}

// ErrorReply is the body of a failed request.
type ErrorReply struct {
	OK    bool      `json:"ok"`
	Error ErrorBody `json:"error"`
}

// ToError turns any error into its body.
func ToError(err error) ErrorBody {
	var ge *graph.Error
	if errors.As(err, &ge) {
		code := ge.WireCode()
		return ErrorBody{Message: err.Error(), Code: code, StatusCode: api.StatusFor(code), GraphCode: ge.Code, Node: ge.Node}
	}
	we := wire.ToError(err)
	return ErrorBody{Message: we.Message, Code: we.Code, StatusCode: api.StatusFor(we.Code), GraphCode: graph.Code(we.Code)}
}

// Event types of a run's graph event stream are graph.RunEvent's.
