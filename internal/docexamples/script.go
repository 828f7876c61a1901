package docexamples

import (
	"fmt"
	"strings"
)

// StatusMismatch is the exit status of a script whose command ended with
// another status than its document gives; the script says which on stderr.
const StatusMismatch = 97

// Runnable returns the commands of blocks that run, in order.
func Runnable(blocks []Block) []Command {
	var out []Command
	for _, b := range blocks {
		for _, c := range b.Commands {
			if c.Skip == "" {
				out = append(out, c)
			}
		}
	}
	return out
}

// Script returns a bash script that runs cmds, the examples of the
// document called name, one after the other in one shell (so that a
// variable one example sets is there for the next, as for a reader typing
// them), and stops at the first whose exit status is not the documented
// one. Commands started in the background are stopped (SIGTERM, then
// waited for) when the script ends.
func Script(name string, cmds []Command) string {
	var b strings.Builder
	b.WriteString("# Generated from " + name + " by internal/docexamples.\n")
	b.WriteString("__bg=\n")
	b.WriteString("trap 'if [ -n \"$__bg\" ]; then kill -TERM $__bg 2>/dev/null; wait $__bg 2>/dev/null; fi' EXIT\n")
	for _, c := range cmds {
		where := fmt.Sprintf("%s:%d", name, c.Line)
		fmt.Fprintf(&b, "\nprintf '%%s\\n' %s >&2\n", quote("=== "+where+": "+c.Text))
		b.WriteString(c.Text + "\n")
		if c.Background {
			b.WriteString("__bg=\"$__bg $!\"\n")
			continue
		}
		fmt.Fprintf(&b, "__s=$?; if [ \"$__s\" -ne %d ]; then printf '%%s\\n' \"%s: exit status $__s, the docs say %d\" >&2; exit %d; fi\n",
			c.Exit, where, c.Exit, StatusMismatch)
	}
	return b.String()
}

// quote quotes s for bash as one word.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
