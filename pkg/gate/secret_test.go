package gate

import "testing"

// TestShellAsksBeforeShowingSecrets is the gate's part of finding 2 of
// issue 18: a command that expands a variable whose name looks like a
// secret's, or reads a process's environment, needs a person, whatever the
// allowlist says about the command itself.
func TestShellAsksBeforeShowingSecrets(t *testing.T) {
	fx := newFixture(t)
	runJudgeCases(t, fx, fx.gate(t, testPolicy()), KindShell, []judgeCase{
		{name: "the reported probe", req: `echo "A=$ANTHROPIC_API_KEY"`, want: Ask, reason: "looks like a secret"},
		{name: "a token", req: "echo $GITHUB_TOKEN", want: Ask, reason: "$GITHUB_TOKEN"},
		{name: "braces and a default", req: "echo ${DB_PASSWORD:-none}", want: Ask},
		{name: "a secret in lower case", req: `echo "$my_secret"`, want: Ask},
		{name: "credentials", req: "echo $GOOGLE_APPLICATION_CREDENTIALS", want: Ask},
		{name: "its length", req: "echo ${#OPENAI_API_KEY}", want: Ask},
		{name: "in an argument of an allowed command", req: "ls $AWS_SECRET_ACCESS_KEY", want: Ask},
		{name: "in a redirect", req: "echo x > $SESSION_TOKEN", want: Ask},
		{name: "harmless variables", req: "echo $HOME $PATH $PWD", want: Allow},
		{name: "a name that only ends like one", req: "echo $MONKEY", want: Allow},
		{name: "its own environment", req: "cat /proc/self/environ", want: Ask, reason: "process's environment"},
		{name: "another's environment", req: "cat /proc/1/environ", want: Ask, reason: "process's environment"},
		{name: "a thread's environment", req: "cat /proc/1/task/1/environ", want: Ask, reason: "process's environment"},
		{name: "environment through a redirect", req: `tr '\0' '\n' < /proc/self/environ`, want: Ask},
		{name: "every environment", req: "cat /proc/*/environ", want: Ask},
	})
}
