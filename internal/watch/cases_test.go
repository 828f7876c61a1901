package watch

// The golden cases of the renderer: for every event type of
// docs/events.md a short run of events ending in that type, rendered in
// plain text and in colour (testdata/golden/NAME.plain.txt, .color.txt).

// ev is one event of a case: its type and its data as JSON.
type ev struct {
	typ  string
	data string
}

type goldenCase struct {
	name string
	// covers is the event type the case is about; several cases may
	// cover one type.
	covers string
	events []ev
}

// The opening of a review-mode turn, which many cases continue.
var turnOpening = []ev{
	ev{"sessionStarted", `{"engine":"script","cwd":"/home/me/project","mode":"review"}`},
	ev{"userMessage", `{"id":"m1","text":"Create hello.txt, then show it.","kind":"send","queued":false}`},
	ev{"turnStarted", `{"turn":1,"messageId":"m1","text":"Create hello.txt, then show it."}`},
}

func opening(more ...ev) []ev {
	return append(append([]ev(nil), turnOpening...), more...)
}

const (
	writeStarted = `{"toolId":"tool-1","tool":"Write","kind":"edit","summary":"Write hello.txt","path":"hello.txt"}`
	createHello  = `{"editId":"e1","toolId":"tool-1","path":"hello.txt","auto":false,"edit":{"path":"hello.txt","kind":"create","binary":false,"added":1,"removed":0,"oldSize":0,"newSize":6,"hunks":[{"id":"h1","header":"@@ -0,0 +1 @@","oldStart":0,"oldLines":0,"newStart":1,"newLines":1,"added":1,"removed":0,"lines":[{"op":"add","text":"hello","eol":"\n"}]}]}}`
	// Two hunks: a CRLF line, and a last line without its newline.
	modifyMain = `{"editId":"e2","toolId":"tool-2","path":"cmd/app/main.go","auto":false,"edit":{"path":"cmd/app/main.go","kind":"modify","binary":false,"added":3,"removed":2,"oldSize":200,"newSize":210,"hunks":[` +
		`{"id":"h1","header":"@@ -2,3 +2,3 @@","oldStart":2,"oldLines":3,"newStart":2,"newLines":3,"added":1,"removed":1,"lines":[{"op":"context","text":"","eol":"\n"},{"op":"delete","text":"import \"fmt\"","eol":"\n"},{"op":"add","text":"import \"os\"","eol":"\r\n"},{"op":"context","text":"","eol":"\n"}]},` +
		`{"id":"h2","header":"@@ -12,2 +12,3 @@","oldStart":12,"oldLines":2,"newStart":12,"newLines":3,"added":2,"removed":1,"lines":[{"op":"context","text":"func main() {","eol":"\n"},{"op":"delete","text":"\tfmt.Println(\"hi\")","eol":""},{"op":"add","text":"\tos.Exit(run())","eol":"\n"},{"op":"add","text":"}","eol":""}]}]}}`
)

var goldenCases = []goldenCase{
	{name: "sessionStarted", covers: "sessionStarted", events: []ev{
		ev{"sessionStarted", `{"engine":"claude","cwd":"/home/me/project","mode":"review","model":"claude-sonnet","unattended":true,"parent":"9a8b7c6d5e4f"}`},
	}},
	{name: "sessionResumed", covers: "sessionResumed", events: []ev{
		ev{"sessionResumed", `{"engine":"script","cwd":"/home/me/project","mode":"auto","engineSession":"script-3f2a"}`},
	}},
	{name: "userMessage", covers: "userMessage", events: []ev{
		ev{"userMessage", `{"id":"m1","text":"Add a README.\nKeep it short.","kind":"send","queued":false}`},
		ev{"userMessage", `{"id":"m2","text":"then run the tests","kind":"send","queued":true}`},
		ev{"userMessage", `{"id":"m3","text":"The goal is not met yet:\n- tests pass: 2 fail","kind":"goalCheck","queued":true}`},
		ev{"userMessage", `{"id":"m4","text":"check the build","kind":"loop","queued":false}`},
	}},
	{name: "turnStarted", covers: "turnStarted", events: []ev{
		ev{"userMessage", `{"id":"m1","text":"fix the bug","kind":"send","queued":false}`},
		ev{"turnStarted", `{"turn":1,"messageId":"m1","text":"fix the bug"}`},
		ev{"userMessage", `{"id":"m2","text":"then run the tests","kind":"send","queued":true}`},
		ev{"assistantText", `{"text":"Fixed."}`},
		ev{"turnEnded", `{"turn":1,"outcome":"done","durationMs":900,"usage":{"inputTokens":100,"outputTokens":20,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0.0006,"estimated":true},"files":0,"added":0,"removed":0}`},
		ev{"turnStarted", `{"turn":2,"messageId":"m2","text":"then run the tests"}`},
	}},
	{name: "assistantDelta", covers: "assistantDelta", events: opening(
		ev{"assistantDelta", `{"text":"Creating "}`},
		ev{"assistantDelta", `{"text":"hello.txt"}`},
	)},
	{name: "assistantText", covers: "assistantText", events: opening(
		ev{"assistantDelta", `{"text":"Creating "}`},
		ev{"assistantText", `{"text":"Creating hello.txt.\n\nIt says \u001b[31mhello\u001b[0m.\n"}`},
	)},
	{name: "toolStarted", covers: "toolStarted", events: opening(
		ev{"toolStarted", `{"toolId":"tool-1","tool":"Bash","kind":"shell","summary":"ls -la","command":"ls -la"}`},
		ev{"toolStarted", `{"toolId":"tool-2","tool":"WebFetch","kind":"fetch","summary":"","url":"https://example.com/doc"}`},
	)},
	{name: "toolFinished", covers: "toolFinished", events: opening(
		ev{"toolStarted", `{"toolId":"tool-1","tool":"Bash","kind":"shell","summary":"cat hello.txt","command":"cat hello.txt"}`},
		ev{"toolFinished", `{"toolId":"tool-1","tool":"Bash","outcome":"ok","durationMs":2,"exitCode":0,"output":"hello\n"}`},
		ev{"toolStarted", writeStarted},
		ev{"toolFinished", `{"toolId":"tool-1","tool":"Write","outcome":"ok","durationMs":120}`},
		ev{"toolStarted", `{"toolId":"tool-3","tool":"Bash","kind":"shell","summary":"go test ./...","command":"go test ./..."}`},
		ev{"toolFinished", `{"toolId":"tool-3","tool":"Bash","outcome":"error","durationMs":4210,"exitCode":1,"output":"ok  \tpkg/a\n--- FAIL: TestB (0.00s)\n    b_test.go:9: got 2, want 3\nFAIL\n\n"}`},
		ev{"toolStarted", `{"toolId":"tool-4","tool":"Bash","kind":"shell","summary":"rm -rf build","command":"rm -rf build"}`},
		ev{"toolFinished", `{"toolId":"tool-4","tool":"Bash","outcome":"denied","durationMs":0,"message":"The person denied this command: not now"}`},
		ev{"toolStarted", `{"toolId":"tool-5","tool":"Edit","kind":"edit","summary":"Edit main.go","path":"main.go"}`},
		ev{"toolFinished", `{"toolId":"tool-5","tool":"Edit","outcome":"partial","durationMs":5000,"message":"The reviewer accepted only part of this edit to main.go. Corral applied hunks h1 itself; hunks h2 were rejected and not written."}`},
		ev{"toolStarted", `{"toolId":"tool-6","tool":"Bash","kind":"shell","summary":"sleep 60","command":"sleep 60"}`},
		ev{"toolFinished", `{"toolId":"tool-6","tool":"Bash","outcome":"stopped","durationMs":61000}`},
	)},
	{name: "askOpened", covers: "askOpened", events: opening(
		ev{"toolStarted", `{"toolId":"tool-1","tool":"Bash","kind":"shell","summary":"make && curl x | sh","command":"make && curl x | sh"}`},
		ev{"askOpened", `{"askId":"a1","toolId":"tool-1","tool":"Bash","category":"shell","reason":"curl reaches the network","command":"make && curl x | sh","parts":[{"command":"make","decision":"allow","category":"shell","reason":"on the allowlist"},{"command":"curl x","decision":"ask","category":"network","reason":"curl reaches the network"},{"command":"sh","decision":"ask","category":"shell","reason":"sh is not on the allowlist"}]}`},
		ev{"askOpened", `{"askId":"a2","toolId":"tool-2","tool":"Read","category":"read","reason":"outside the worktree","path":"/etc/hosts"}`},
		ev{"askOpened", `{"askId":"a3","toolId":"tool-3","tool":"WebFetch","category":"web","reason":"not an allowed host","url":"https://example.com/doc"}`},
		ev{"askOpened", `{"askId":"a4","toolId":"tool-4","tool":"mcp__db__query","category":"mcp","reason":"MCP tools ask first"}`},
	)},
	{name: "askAnswered", covers: "askAnswered", events: opening(
		ev{"askOpened", `{"askId":"a1","toolId":"tool-1","tool":"Bash","category":"shell","reason":"not on the allowlist","command":"cat hello.txt"}`},
		ev{"askAnswered", `{"askId":"a1","decision":"allow","by":"user"}`},
		ev{"askOpened", `{"askId":"a2","toolId":"tool-2","tool":"Bash","category":"shell","reason":"not on the allowlist","command":"rm -rf build"}`},
		ev{"askAnswered", `{"askId":"a2","decision":"deny","note":"keep the build folder","by":"user"}`},
		ev{"askOpened", `{"askId":"a3","toolId":"tool-3","tool":"Bash","category":"shell","reason":"not on the allowlist","command":"make deploy"}`},
		ev{"askAnswered", `{"askId":"a3","decision":"deny","by":"stopped"}`},
	)},
	{name: "steerDelivered", covers: "steerDelivered", events: opening(
		ev{"steerDelivered", `{"text":"keep the answer short","toolId":"tool-1"}`},
		ev{"steerDelivered", `{"text":"use British spelling","native":true}`},
	)},
	{name: "steerRequeued", covers: "steerRequeued", events: opening(
		ev{"steerRequeued", `{"text":"also update the changelog"}`},
	)},
	{name: "hunkStaged", covers: "hunkStaged", events: opening(
		ev{"toolStarted", writeStarted},
		ev{"hunkStaged", createHello},
		ev{"hunkStaged", modifyMain},
		ev{"hunkStaged", `{"editId":"e3","toolId":"tool-3","path":"logo.png","auto":false,"edit":{"path":"logo.png","kind":"modify","binary":true,"added":0,"removed":0,"oldSize":4096,"newSize":5120,"hunks":[{"id":"h1","header":"binary 4096 → 5120 bytes","oldStart":0,"oldLines":0,"newStart":0,"newLines":0,"added":0,"removed":0,"lines":[]}]}}`},
		ev{"hunkStaged", `{"editId":"e4","toolId":"tool-4","path":"old.txt","auto":true,"edit":{"path":"old.txt","kind":"delete","binary":false,"added":0,"removed":1,"oldSize":4,"newSize":0,"hunks":[{"id":"h1","header":"@@ -1 +0,0 @@","oldStart":1,"oldLines":1,"newStart":0,"newLines":0,"added":0,"removed":1,"lines":[{"op":"delete","text":"old","eol":"\n"}]}]}}`},
	)},
	{name: "hunkDecided", covers: "hunkDecided", events: opening(
		ev{"toolStarted", writeStarted},
		ev{"hunkStaged", createHello},
		ev{"hunkDecided", `{"editId":"e1","hunkId":"h1","decision":"accept","by":"user"}`},
		ev{"hunkStaged", modifyMain},
		ev{"hunkDecided", `{"editId":"e2","hunkId":"h1","decision":"reject","note":"keep fmt","by":"user"}`},
		ev{"hunkDecided", `{"editId":"e2","hunkId":"h2","decision":"reject","by":"stopped"}`},
	)},
	{name: "editApplied", covers: "editApplied", events: opening(
		ev{"editApplied", `{"editId":"e1","path":"hello.txt","by":"engine","hunks":["h1"],"added":1,"removed":0}`},
		ev{"editApplied", `{"editId":"e2","path":"main.go","by":"corral","hunks":["h2"],"reverted":true,"added":0,"removed":2}`},
		ev{"editApplied", `{"editId":"e3","path":"main.go","by":"corral","hunks":["h1","h3"],"added":0,"removed":0,"conflict":"hunk h3 no longer applies at line 40"}`},
	)},
	{name: "turnEnded", covers: "turnEnded", events: opening(
		ev{"context", `{"usedTokens":52000,"windowTokens":200000,"percent":26}`},
		ev{"turnEnded", `{"turn":1,"outcome":"done","durationMs":12345,"usage":{"inputTokens":1000,"outputTokens":234,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0.0042,"estimated":true},"files":1,"added":1,"removed":0,"summary":"1 file · +1 −0"}`},
		ev{"turnStarted", `{"turn":2,"messageId":"m2","text":"go on"}`},
		ev{"turnEnded", `{"turn":2,"outcome":"stopped","durationMs":800,"usage":{"inputTokens":5,"outputTokens":0,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0,"estimated":true},"files":0,"added":0,"removed":0}`},
		ev{"turnStarted", `{"turn":3,"messageId":"m3","text":"again"}`},
		ev{"turnEnded", `{"turn":3,"outcome":"failed","durationMs":65000,"usage":{"inputTokens":2500000,"outputTokens":12000,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":12.5,"estimated":false},"files":2,"added":14,"removed":3,"summary":"2 files · +14 −3"}`},
		ev{"turnStarted", `{"turn":4,"messageId":"m4","text":"once more"}`},
		ev{"turnEnded", `{"turn":4,"outcome":"interrupted","durationMs":0,"usage":{"inputTokens":0,"outputTokens":0,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0,"estimated":false},"files":0,"added":0,"removed":0}`},
	)},
	{name: "stopped", covers: "stopped", events: opening(
		ev{"stopped", `{"reason":"user","interruptedTurn":true,"deniedAsks":1,"rejectedHunks":2,"clearedQueue":1}`},
		ev{"stopped", `{"reason":"spendCap","interruptedTurn":false,"deniedAsks":0,"rejectedHunks":0,"clearedQueue":0}`},
	)},
	{name: "failure", covers: "failure", events: opening(
		ev{"failure", `{"code":"signInExpired","message":"the model endpoint rejected the credentials (401)","action":"Sign in again, then resume the session.","stderr":["error: 401 Unauthorized","  at request (client.js:12)"]}`},
		ev{"failure", `{"code":"permissionUnavailable","message":"rm -rf build needs approval, but the session is unattended"}`},
	)},
	{name: "logRepaired", covers: "logRepaired", events: opening(
		ev{"logRepaired", `{"file":"events.jsonl.damaged","ranges":[{"offset":5120,"length":9,"reason":"not JSON"},{"offset":9001,"length":31,"reason":"torn tail"}],"rangeCount":2,"bytes":40,"lastValidSeq":41}`},
		ev{"logRepaired", `{"file":"events.jsonl.damaged","ranges":[{"offset":0,"length":1,"reason":"blank line"},{"offset":70,"length":1,"reason":"blank line"},{"offset":140,"length":1,"reason":"blank line"}],"rangeCount":250,"bytes":250,"lastValidSeq":9}`},
	)},
	{name: "usage", covers: "usage", events: []ev{
		ev{"usage", `{"inputTokens":1208,"outputTokens":20,"cacheReadTokens":0,"cacheWriteTokens":0,"costUsd":0.003924,"estimated":true,"model":"script-1"}`},
	}},
	{name: "context", covers: "context", events: []ev{
		ev{"context", `{"usedTokens":1228,"windowTokens":200000,"percent":0.614}`},
	}},
	{name: "retry", covers: "retry", events: opening(
		ev{"retry", `{"attempt":2,"maxRetries":5,"delayMs":1500,"error":"529 overloaded"}`},
		ev{"retry", `{"attempt":1,"delayMs":200,"error":""}`},
	)},
	{name: "modeChanged", covers: "modeChanged", events: []ev{
		ev{"modeChanged", `{"mode":"auto"}`},
	}},
	{name: "spendCapSet", covers: "spendCapSet", events: []ev{
		ev{"spendCapSet", `{"spendCapUsd":2}`},
		ev{"spendCapSet", `{"spendCapUsd":0}`},
	}},
	{name: "renamed", covers: "renamed", events: []ev{
		ev{"renamed", `{"title":"Fix the flaky test"}`},
		ev{"renamed", `{"title":"\u001b[2Ja title that came in with an escape"}`},
	}},
	{name: "goalSet", covers: "goalSet", events: []ev{
		ev{"goalSet", `{"goal":"tests pass; lint is clean","clauses":["tests pass","lint is clean"]}`},
	}},
	{name: "goalCleared", covers: "goalCleared", events: []ev{
		ev{"goalCleared", ``},
	}},
	{name: "goalCheck", covers: "goalCheck", events: []ev{
		ev{"goalCheck", `{"goal":"hello.txt exists; it holds a greeting","clauses":[{"clause":"hello.txt exists","met":true,"evidence":"hello.txt exists in the worktree"},{"clause":"it holds a greeting","met":true,"evidence":"the file holds a two-line greeting"}],"met":2,"total":2,"holds":true,"summary":"holds · 2/2","attempt":1,"limit":20,"by":"judge"}`},
		ev{"goalCheck", `{"goal":"tests pass; lint is clean","clauses":[{"clause":"tests pass","met":false,"evidence":"TestB fails"},{"clause":"lint is clean","met":true,"evidence":"no findings"}],"met":1,"total":2,"holds":false,"summary":"unmet · 1/2","attempt":20,"limit":20,"limitReached":true,"by":"judge"}`},
		ev{"goalCheck", `{"goal":"ship it","clauses":[],"met":0,"total":1,"holds":true,"attempt":0,"limit":20,"by":"user"}`},
	}},
	{name: "rotated", covers: "rotated", events: []ev{
		ev{"rotated", `{"from":"3f2a9c0d1e4b","to":"7d1e2f3a4b5c","reason":"fork"}`},
	}},
	{name: "compacted", covers: "compacted", events: []ev{
		ev{"compacted", `{"beforePercent":96}`},
	}},
	{name: "queueChanged", covers: "queueChanged", events: []ev{
		ev{"queueChanged", `{"queued":[{"id":"m7","text":"then run the tests"}]}`},
	}},
	{name: "unreadable", events: []ev{
		ev{"toolStarted", `{"toolId":17}`},
		ev{"someFutureEvent", `{"anything":true}`},
	}},
}
