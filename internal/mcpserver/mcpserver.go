// Package mcpserver is Corral's Model Context Protocol server: graph runs
// (graph_open, graph_next, graph_run, graph_submit, graph_retry,
// graph_status) and, for agents that drive sessions themselves, session
// tools (session_new, session_send, session_wait, session_answer,
// session_decide_hunk, session_status, session_stop, session_events). It
// talks to a running supervisor for sessions and keeps graph runs in the
// state folder's store, so several servers and the supervisor can drive
// one run. Tool inputs have JSON Schemas generated from their Go types;
// a failure is an MCP tool error whose text starts with its typed code.
// docs/mcp.md is the reference.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/corral-dev/corral/internal/graph"
	"github.com/corral-dev/corral/internal/graph/executor"
	"github.com/corral-dev/corral/internal/graph/graphapi"
	"github.com/corral-dev/corral/internal/graph/service"
	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Name is the server's name as clients see it.
const Name = "corral"

// Instructions tell a connected agent how to use the tools.
const Instructions = `Corral runs a request as a graph of agent sessions: plan → setgoal → critique, then per subgoal implement → test → gate, then gate:goal → report.
Open a run with graph_open, then loop: graph_next lists the ready nodes; graph_run runs one to its verdict (it blocks; the node's briefing is built from the run, so send no prompt). When a gate rejects or a node fails, graph_retry the subgoal it names in "blocked" (or the spec, with no subgoal); a retry whose budget is gone settles the failure and says what became unreachable. The run is complete when its report node has run. A node routed to "self" is yours: do what its briefing says and graph_submit the result with its claim.
The session_* tools drive single sessions directly.`

// Config builds a server.
type Config struct {
	Service  *service.Service
	Sessions executor.Sessions
	Version  string
}

// New returns the MCP server with every tool.
func New(cfg Config) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: Name, Version: cfg.Version}, &mcp.ServerOptions{Instructions: Instructions})
	g := &graphTools{svc: cfg.Service}
	add(s, "graph_open", "Open a graph run on a request. Returns the run id and the first ready nodes.", g.open)
	add(s, "graph_next", "List the nodes that may run now and how each is routed, what runs, and what is blocked (with the retry that moves it on).", g.next)
	add(s, "graph_run", "Run one node to its verdict. Blocks until the node's session ends its turn or needs a person. Returns a one-line verdict; the node's results stay in the run.", g.run)
	add(s, "graph_submit", "Submit the result of a node routed to self (or of a ready node you ran yourself). It is judged as a session's result would be.", g.submit)
	add(s, "graph_retry", "Retry a failure: a subgoal (a new attempt with the rejection's feedback), the spec (no subgoal), or report. When the budget is gone the failure becomes final: returns unreachable[] and the next ready nodes.", g.retry)
	add(s, "graph_status", "One run's status (stage rail, subgoals, now / next / blocked, nodes, routing), or, without runId, every run with the node running now and the last to finish.", g.status)
	t := &sessionTools{s: cfg.Sessions}
	add(s, "session_new", "Create a session on an engine. Returns its id.", t.create)
	add(s, "session_send", "Send a message to a session (queued while a turn runs).", t.send)
	add(s, "session_wait", "Wait until the session's turn ends or a person is needed (an ask, hunks to review). Returns the turn's outcome and text, or what waits.", t.wait)
	add(s, "session_answer", "Answer a session's open ask: allow or deny.", t.answer)
	add(s, "session_decide_hunk", "Accept or reject a staged hunk.", t.decideHunk)
	add(s, "session_status", "A session's status: state, turn, queue, open asks, pending edits, usage.", t.status)
	add(s, "session_stop", "Stop a session: interrupt the turn, deny asks, reject hunks, clear the queue.", t.stop)
	add(s, "session_events", "A page of a session's events, from a seq.", t.events)
	return s
}

// Serve runs the server on a transport until the client goes or ctx ends.
func Serve(ctx context.Context, cfg Config, t mcp.Transport) error {
	return New(cfg).Run(ctx, t)
}

// schemaOptions are the inference options of every input schema: a raw
// JSON value is an object (a node's result).
var schemaOptions = &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
	reflect.TypeFor[json.RawMessage](): {Type: "object", Description: "a JSON object"},
}}

// InputSchema is the JSON Schema of a tool's input type.
func InputSchema[In any]() (*jsonschema.Schema, error) {
	return jsonschema.For[In](schemaOptions)
}

// add registers a tool whose handler returns its output and a one-line
// text for the model (empty: the output's JSON).
func add[In, Out any](s *mcp.Server, name, desc string, fn func(context.Context, In) (*Out, string, error)) {
	in, err := InputSchema[In]()
	if err != nil {
		panic(fmt.Sprintf("tool %s: input schema: %v", name, err))
	}
	mcp.AddTool(s, &mcp.Tool{Name: name, Description: desc, InputSchema: in},
		func(ctx context.Context, _ *mcp.CallToolRequest, args In) (*mcp.CallToolResult, any, error) {
			out, line, err := fn(ctx, args)
			if err != nil {
				return ErrorResult(err), nil, nil
			}
			raw, err := json.Marshal(out)
			if err != nil {
				return ErrorResult(fmt.Errorf("encode %s's output: %w", name, err)), nil, nil
			}
			if line == "" {
				line = string(raw)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: line}}, StructuredContent: json.RawMessage(raw)}, nil, nil
		})
}

// ErrorResult is a failure as an MCP tool error: text "code: message",
// and structured content {"error": {message, code, statusCode, graphCode,
// node}}.
func ErrorResult(err error) *mcp.CallToolResult {
	e := graphapi.ToError(err)
	raw, _ := json.Marshal(map[string]any{"error": e})
	code := string(e.GraphCode)
	if code == "" {
		code = string(e.Code)
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: code + ": " + e.Message}},
		StructuredContent: json.RawMessage(raw)}
}

// graphTools are the graph_* tools.
type graphTools struct{ svc *service.Service }

func (g *graphTools) open(ctx context.Context, in graphapi.OpenRequest) (*graphapi.OpenReply, string, error) {
	out, err := g.svc.Open(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return out, "", nil
}

func (g *graphTools) next(ctx context.Context, in graphapi.RunRef) (*graphapi.NextReply, string, error) {
	out, err := g.svc.Next(ctx, in)
	return out, "", err
}

func (g *graphTools) run(ctx context.Context, in graphapi.NodeRef) (*graph.Verdict, string, error) {
	v, err := g.svc.Run(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return v, v.Line(), nil
}

func (g *graphTools) submit(ctx context.Context, in graphapi.SubmitRequest) (*graph.Verdict, string, error) {
	v, err := g.svc.Submit(ctx, in)
	if err != nil {
		return nil, "", err
	}
	return v, v.Line(), nil
}

func (g *graphTools) retry(ctx context.Context, in graphapi.RetryRequest) (*graphapi.RetryReply, string, error) {
	out, err := g.svc.Retry(ctx, in)
	return out, "", err
}

func (g *graphTools) status(ctx context.Context, in graphapi.StatusRequest) (*graphapi.StatusReply, string, error) {
	out, err := g.svc.Status(ctx, in)
	return out, "", err
}
