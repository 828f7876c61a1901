// Package plugin runs a Corral engine out of process, as a hashicorp/go-plugin
// plugin over net/rpc.
//
// A plugin author writes an engine.Engine and serves it from main:
//
//	func main() { plugin.Serve(myengine.New) }
//
// The runner side is Engine: an engine.Engine that launches the plugin
// binary, completes the handshake (Handshake: go-plugin core protocol, the
// Corral engine protocol version ProtocolVersion and a magic cookie), and
// forwards every call to it. The engine's Host lives in the runner, so the
// plugin reaches it back through a second net/rpc stream that go-plugin's
// MuxBroker opens over the same connection: Emit, Permit (which blocks while
// a person answers) and TakeSteers are calls from the plugin into the runner
// made while the runner's Turn call into the plugin is still open.
//
// Context cancellation crosses the boundary in both directions: every call
// that takes a context carries a call id, and when the caller's context ends
// it sends Cancel with that id, which cancels the context the other side
// handed to the engine or the Host.
//
// The plugin process is the runner's child in its own process group, killed
// if the runner dies, with no inherited credential variable; credentials
// reach it inside the Start call only. Its stderr is kept as a crash tail. A
// plugin that dies mid-turn fails that turn with an engineError carrying the
// tail, and the next call launches a fresh process that resumes the
// conversation.
package plugin
