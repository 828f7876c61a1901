// Package fakemodel is a scripted stand-in for the model APIs that agent
// CLIs call, so engines can be driven end to end offline and on loopback.
//
// One [Server] speaks three wire formats, with streaming:
//
//   - the Anthropic Messages API (POST /v1/messages, /v1/messages/count_tokens),
//     which Claude Code uses;
//   - the OpenAI Responses API (POST /v1/responses), which Codex and Copilot use;
//   - OpenAI Chat Completions (POST /v1/chat/completions), which Copilot uses
//     with a custom provider;
//
// plus GET /v1/models and a 200 for any HEAD probe. The "/v1" prefix is
// optional, so base URLs with or without it work.
//
// A [Scenario] is an ordered script of [Step]s: assistant text, tool calls,
// HTTP errors, cut, slow, hanging or held streams, usage figures. A step is
// written once and rendered in whichever format the request used, so one
// scenario drives any engine; per-API tool lists cover the engines' different
// tool names. Side steps answer recurring requests (title generation and the
// like) without consuming the script, and a fallback step answers anything
// else, so a CLI is never left hanging by an exhausted script.
//
// Every request is kept in memory ([Server.Requests]) and optionally appended
// to a JSONL log, with credential headers replaced by a fingerprint
// ([Fingerprint]). docs/fakemodel.md describes the scenario schema, the
// matching order and the exact event sequences of each format.
package fakemodel
