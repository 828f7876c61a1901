package engineprobe

import (
	"embed"
)

// GoldenPrompt is what an engine's golden turn is asked, unless the engine
// recorded its transcripts with a prompt of its own (Codex's asks for a
// command and a patch the gate refuses).
const GoldenPrompt = "Create hello.txt, then show it."

// goldenScenarios are, by engine, the fake model's part of the golden
// turn (internal/fakemodel's scenario JSON): for Claude Code a Write of
// hello.txt, a Bash that shows it, a final "Done."; for Codex a command,
// a patch, a final "All done.". They live here, apart from the engines,
// because both sides of a replay need them: the supervisor serves them
// (`supervisor doctor engines`), the runner plays the turn, and neither
// links the other's half (the runner does not link the fake model).
//
//go:embed golden/*.json
var goldenScenarios embed.FS

// GoldenScenario returns the scenario of engine's golden turn, and whether
// it has one.
func GoldenScenario(engine string) ([]byte, bool) {
	raw, err := goldenScenarios.ReadFile("golden/" + engine + ".json")
	return raw, err == nil
}
