// Package schema is the one description of Corral's contract with its
// shells: the session spec, every command and its result, every event type
// and its data, errors and their codes, the HTTP API's bodies and routes,
// and the supervisor ↔ runner messages. The Go types are the source of
// truth; a registry of them (Default) is reflected into a JSON Schema
// (2020-12) document, an OpenAPI 3.1 document of the HTTP API, and
// TypeScript types, with the types' and fields' doc comments as
// descriptions.
//
// The generated files are checked in (api/schema.json, api/openapi.json,
// clients/typescript/src/types.gen.ts); `go generate ./internal/schema`
// (make generate) rewrites them, and a test fails while one is stale.
// `supervisor schema` prints them, and the supervisor serves the OpenAPI
// document at GET /v1/openapi.json.
package schema
