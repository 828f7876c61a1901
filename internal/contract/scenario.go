package contract

// Scenario is what the scenario's sessions play: an ask, an edit to
// review, then the end of the turn. clients/typescript's live test plays
// the same with the TypeScript client.
const Scenario = `name: contract
turns:
  - match: build
    steps:
      - say: "Building."
      - tool: shell
        command: "uptime"
      - tool: write
        path: notes.txt
        content: "new notes\n"
      - say: "Done."
fallback:
  steps:
    - say: "heard you"
`
