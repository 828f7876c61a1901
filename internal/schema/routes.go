package schema

import (
	"github.com/corral-dev/corral/internal/graph/graphapi"
	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/wire"
)

// routes are the HTTP API's routes (docs/api.md).
func routes() []Route {
	id := "/v1/sessions/{id}"
	run := "/v1/graphs/{run}"
	return []Route{
		{Method: "GET", Path: "/v1/health", Summary: "Whether the supervisor answers, and how many sessions are live.", Reply: api.HealthReply{}},
		{Method: "GET", Path: "/v1/openapi.json", Summary: "This document.", Reply: map[string]any{}},
		{Method: "POST", Path: "/v1/sessions", Summary: "Create a session and start its runner; answers once the session is live.", Body: wire.Spec{}, Status: 201, Reply: api.SessionReply{}},
		{Method: "GET", Path: "/v1/sessions", Summary: "Every session, most recently updated first.", Reply: api.SessionsReply{}},
		{Method: "GET", Path: id, Summary: "One session (starts no runner).", Reply: api.SessionReply{}},
		{Method: "DELETE", Path: id, Summary: "Stop the session's runner and remove the session.", Reply: wire.Reply{}},
		{Method: "POST", Path: id + "/commands", Summary: "Run a control command; the reply is the runner's (docs/commands.md).", Body: CommandBody{}, Reply: wire.Reply{}},
		{Method: "GET", Path: id + "/events", Summary: "The session's events: its log, then live.", Stream: "SessionEvent", Params: append([]Param{
			{Name: "from", In: "query", Schema: intg, Doc: "the first seq wanted (0 and 1: everything)"},
			{Name: "follow", In: "query", Schema: boo, Doc: "false ends the stream at the end of the log (default true)"},
			{Name: "Last-Event-ID", In: "header", Schema: intg, Doc: "the last seq received: the stream resumes after it (wins over from)"},
		}, streamParams...)},
		{Method: "GET", Path: "/v1/events", Summary: "Every session's events and lifecycle changes on one stream.", Stream: "FeedItem", Params: append([]Param{
			{Name: "session", In: "query", Schema: str, Repeated: true, Doc: "only these sessions (repeatable, or comma-separated)"},
			{Name: "type", In: "query", Schema: str, Repeated: true, Doc: "only these event and lifecycle types (repeatable, or comma-separated)"},
			{Name: "from", In: "query", Schema: str, Doc: "now (the default), start (every log first, then live), or a cursor to resume after"},
			{Name: "Last-Event-ID", In: "header", Schema: str, Doc: "the last cursor received: the stream resumes after it (wins over from)"},
		}, streamParams...)},
		{Method: "GET", Path: id + "/wait", Summary: "A long poll: answers when the turn ends, a person is needed, or the session is idle.", Reply: api.WaitReply{}, Params: []Param{
			{Name: "for", In: "query", Schema: ref("WaitFor"), Doc: "what to wait for (default idle)"},
			{Name: "after", In: "query", Schema: intg, Doc: "turnEnd: the first turnEnded past this seq"},
			{Name: "timeout", In: "query", Schema: str, Doc: "how long to wait: a duration (30s, 5m) or seconds; default 30s, at most 10m"},
		}},
		{Method: "GET", Path: id + "/workspace", Summary: "The session's workspace: its worktree, branch, and changes against the base.", Reply: api.WorkspaceReply{}},
		{Method: "POST", Path: id + "/workspace/commit", Summary: "Commit everything in the workspace.", Body: api.CommitRequest{}, Reply: api.CommitReply{}},
		{Method: "POST", Path: id + "/workspace/merge", Summary: "Merge the workspace's branch into its base branch, locally, never forced.", Body: struct{}{}, Reply: api.MergeReply{}},
		{Method: "POST", Path: "/v1/auth/session", Summary: "Sign a browser in: the bearer token or a one-time login code (the body, from a caller without the token) buys an HttpOnly session cookie (docs/api.md, Browser access).", Body: api.SignInRequest{}, Reply: api.SignInReply{}},
		{Method: "DELETE", Path: "/v1/auth/session", Summary: "Sign out: the session cookie is revoked and cleared.", Reply: wire.Reply{}},
		{Method: "POST", Path: "/v1/auth/ticket", Summary: "A short-lived single-use ticket for one event stream or terminal WebSocket (?ticket=).", Reply: api.TicketReply{}},
		{Method: "POST", Path: "/v1/auth/code", Summary: "Mint a one-time login code (the unix socket, or the bearer token); a page exchanges it once for a session cookie.", Reply: api.LoginCodeReply{}},
		{Method: "POST", Path: "/v1/graphs", Summary: "Open a graph run on a request (docs/graph.md).", Body: graphapi.OpenRequest{}, Status: 201, Reply: graphapi.OpenResponse{}},
		{Method: "GET", Path: "/v1/graphs", Summary: "Every graph run, with the nodes running now and the last to finish.", Reply: graphapi.StatusResponse{}},
		{Method: "GET", Path: run, Summary: "One graph run: stage rail, subgoals, now / next / blocked, nodes and routing.", Reply: graphapi.StatusResponse{}},
		{Method: "GET", Path: run + "/next", Summary: "The nodes that may run now and how each would be routed, what runs, what is blocked.", Reply: graphapi.NextResponse{}},
		{Method: "POST", Path: run + "/nodes/{node}/run", Summary: "Run one node to its verdict, in the supervisor; the request lasts as long as the node.", Reply: graphapi.VerdictResponse{}},
		{Method: "POST", Path: run + "/nodes/{node}/submit", Summary: "Submit the result of a node the caller ran itself.", Body: graphapi.SubmitBody{}, Reply: graphapi.VerdictResponse{}},
		{Method: "POST", Path: run + "/retry", Summary: "Retry a failure, or settle it when the budget is gone.", Body: graphapi.RetryBody{}, Reply: graphapi.RetryResponse{}},
		{Method: "GET", Path: run + "/events", Summary: "The run's graph events: its log, then live until the run ends.", Stream: "RunEvent", Params: append([]Param{
			{Name: "from", In: "query", Schema: intg, Doc: "the first seq wanted (0 and 1: everything)"},
			{Name: "follow", In: "query", Schema: boo, Doc: "false ends the stream at the end of the log (default true)"},
			{Name: "Last-Event-ID", In: "header", Schema: intg, Doc: "the last seq received: the stream resumes after it (wins over from)"},
		}, streamParams...)},
		{Method: "GET", Path: "/v1/engines", Summary: "The engines a session may run on: models, settings (engineConfig), and whether a session on each could start.", Reply: api.EnginesReply{}, Params: []Param{
			{Name: "refresh", In: "query", Schema: boo, Doc: "check again now rather than answer what was found less than a minute ago"},
			{Name: "check", In: "query", Schema: enum("accepted"), Doc: "accepted: also try each credential against the model endpoint (network traffic)"},
			{Name: "modelEndpoint", In: "query", Schema: str, Doc: "the endpoint check=accepted tries (default: each engine's own)"},
		}},
		{Method: "GET", Path: "/v1/credentials", Summary: "Where the supervisor keeps credentials, and which items are set (never a secret).", Reply: api.CredentialsReply{}},
		{Method: "PUT", Path: "/v1/credentials/{item}", Summary: "Store a credential item's secret; sessions started from then on get it.", Body: api.SetCredentialRequest{}, Reply: api.CredentialsReply{}},
		{Method: "DELETE", Path: "/v1/credentials/{item}", Summary: "Remove a credential item (not_found when it is not set).", Reply: api.CredentialsReply{}},
		{Method: "GET", Path: id + "/terminals/{termId}", Summary: "Attach to a terminal of the session (WebSocket).", Frames: "TermFrame", Params: []Param{
			{Name: "role", In: "query", Schema: enum(api.RoleOwner, api.RoleReadOnly), Doc: "the role asked for (default read-only)"},
			{Name: "cols", In: "query", Schema: intg, Doc: "the window's width, 1 to 65535"},
			{Name: "rows", In: "query", Schema: intg, Doc: "the window's height, 1 to 65535"},
			{Name: "command", In: "query", Schema: str, Repeated: true, Doc: "a new terminal's program, one parameter per argument"},
		}},
	}
}
