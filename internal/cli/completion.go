package cli

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/internal/engines/catalog"
	"github.com/corral-dev/corral/internal/schema"
	"github.com/corral-dev/corral/pkg/api"
)

// sessionIDs stands, in a command's positional words, for the ids of the
// supervisor's sessions, which the scripts ask `supervisor ls -q` for.
const sessionIDs = "<ID>"

// positional are the words each position of a command's arguments
// completes to; a command whose arguments start with ID, and that is not
// listed, completes session ids first.
var positional = map[string][][]string{
	"goal":       {{sessionIDs}, {"set", "get", "clear", "done"}},
	"mode":       {{sessionIDs}, {"review", "auto", "readonly"}},
	"answer":     {{sessionIDs}, nil, {"allow", "deny"}},
	"hunk":       {{sessionIDs}, nil, {"accept", "reject"}},
	"workspace":  {{sessionIDs}, {"diff", "commit", "merge"}},
	"creds":      {{"ls", "set", "rm"}, creds.Items},
	"graph":      {graphSubcommands()},
	"completion": {{"bash", "zsh", "fish"}},
}

// flagValues are the values of flags that take one of a few words.
var flagValues = map[string][]string{
	"engine": catalog.Names(),
	"mode":   {"review", "auto", "readonly"},
	"for":    {string(api.WaitTurnEnd), string(api.WaitHuman), string(api.WaitIdle)},
	"format": formatNames(),
}

func graphSubcommands() []string {
	var out []string
	for _, c := range graphCommands {
		out = append(out, c.name)
	}
	return out
}

func formatNames() []string {
	var out []string
	for _, f := range schema.Formats() {
		out = append(out, string(f))
	}
	return out
}

// completionCmd is what the scripts know of one command.
type completionCmd struct {
	name       string
	summary    string
	boolFlags  []string // --name, taking no value
	valueFlags []string // --name VALUE
	positional [][]string
}

// completionTable reads every command's flags by running it with --help
// (each makes its flag set and stops there) and adds the external
// commands by name.
func completionTable(cmds []subcommand, ext []External) []completionCmd {
	var out []completionCmd
	for _, c := range cmds {
		cc := completionCmd{name: c.name, summary: c.summary, positional: positional[c.name]}
		if cc.positional == nil && strings.HasPrefix(c.args, "ID") || c.args == "[ID]" {
			cc.positional = [][]string{{sessionIDs}}
		}
		// A command with subcommands (graph) has its flags on them.
		helps := [][]string{{"--help"}}
		if c.name == "graph" {
			helps = nil
			for _, sub := range graphSubcommands() {
				helps = append(helps, []string{sub, "--help"})
			}
		}
		seen := map[string]bool{}
		for _, args := range helps {
			e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
			c.run(context.Background(), e, args)
			if e.flags == nil {
				continue
			}
			e.flags.VisitAll(func(f *flag.Flag) {
				if seen[f.Name] {
					return
				}
				seen[f.Name] = true
				if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
					cc.boolFlags = append(cc.boolFlags, "--"+f.Name)
				} else {
					cc.valueFlags = append(cc.valueFlags, "--"+f.Name)
				}
			})
		}
		sort.Strings(cc.boolFlags)
		sort.Strings(cc.valueFlags)
		out = append(out, cc)
	}
	for _, x := range ext {
		out = append(out, completionCmd{name: x.Name, summary: x.Summary})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func runCompletion(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "completion", "bash|zsh|fish", `Print the shell completion script, generated from the command table:
  bash:  source <(supervisor completion bash)     (or save it in ~/.local/share/bash-completion/completions/supervisor)
  zsh:   source <(supervisor completion zsh)      (in ~/.zshrc, after compinit)
  fish:  supervisor completion fish > ~/.config/fish/completions/supervisor.fish
It completes commands, their flags, the values of --engine, --mode, --for and
--format, session ids (from supervisor ls -q) and each command's words.`)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("completion needs a shell: bash, zsh or fish")
	}
	table := completionTable(commands(), e.ext)
	var script string
	switch pos[0] {
	case "bash":
		script = bashCompletion(table)
	case "zsh":
		script = zshCompletion(table)
	case "fish":
		script = fishCompletion(table)
	default:
		return usagef("completion %q: want bash, zsh or fish", pos[0])
	}
	return e.emit(script, func(w io.Writer) error { _, err := io.WriteString(w, script); return err })
}

// words is a list of completion candidates for a script: sessionIDs
// becomes the ids the supervisor lists.
func words(list []string, ids string) string {
	var plain []string
	var withIDs bool
	for _, w := range list {
		if w == sessionIDs {
			withIDs = true
			continue
		}
		plain = append(plain, w)
	}
	s := strings.Join(plain, " ")
	if withIDs {
		s = strings.TrimSpace(s + " " + ids)
	}
	return s
}

func names(table []completionCmd) []string {
	out := make([]string, 0, len(table)+1)
	for _, c := range table {
		out = append(out, c.name)
	}
	return append(out, "help")
}

func bashCompletion(table []completionCmd) string {
	var b strings.Builder
	b.WriteString(`# bash completion for supervisor, generated by "supervisor completion bash".
_supervisor_ids() { supervisor ls -q 2>/dev/null; }

# _supervisor_flag WORD: the flag WORD names, as --name ("" for no flag).
_supervisor_flag() {
  case "$1" in
    --*) printf '%s' "${1%%=*}" ;;
    -*) printf -- '-%s' "${1%%=*}" ;;
  esac
}

_supervisor() {
  local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "`)
	b.WriteString(strings.Join(names(table), " "))
	b.WriteString(`" -- "$cur"))
    return
  fi
  # valueflags and boolflags as --name, to match; offer as they are shown.
  local cmd="${COMP_WORDS[1]}" valueflags="" boolflags="" offer=""
  case "$cmd" in
`)
	for _, c := range table {
		fmt.Fprintf(&b, "    %s) valueflags=%q; boolflags=%q; offer=%q ;;\n", c.name, strings.Join(c.valueFlags, " "), strings.Join(c.boolFlags, " "),
			strings.Join(shown(append(slices.Clone(c.valueFlags), c.boolFlags...)), " "))
	}
	b.WriteString(`    help) COMPREPLY=($(compgen -W "`)
	b.WriteString(strings.Join(names(table), " "))
	b.WriteString(`" -- "$cur")); return ;;
  esac
  # bash splits --flag=value at the "=": the flag is then two words back.
  if [ "$prev" = "=" ] && [ "$COMP_CWORD" -ge 3 ]; then
    prev="${COMP_WORDS[COMP_CWORD-2]}"
  elif [ "$cur" = "=" ]; then
    cur=""
  fi
  local flag
  flag="$(_supervisor_flag "$prev")"
  if [ -n "$flag" ] && [[ " $valueflags " == *" $flag "* ]]; then
    case "${flag#--}" in
`)
	for _, f := range sortedKeys(flagValues) {
		fmt.Fprintf(&b, "      %s) COMPREPLY=($(compgen -W %q -- \"$cur\")) ;;\n", f, strings.Join(flagValues[f], " "))
	}
	b.WriteString(`      *) COMPREPLY=($(compgen -f -- "$cur")) ;;
    esac
    return
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$offer" -- "$cur"))
    return
  fi
  # Which positional argument is this? Flags and their values do not count.
  local i n=0 w
  for ((i = 2; i < COMP_CWORD; i++)); do
    w="${COMP_WORDS[i]}"
    flag="$(_supervisor_flag "$w")"
    if [ -n "$flag" ]; then
      if [ "${COMP_WORDS[i+1]}" = "=" ]; then
        ((i += 2))
      elif [[ "$w" != *=* && " $valueflags " == *" $flag "* ]]; then
        ((i++))
      fi
      continue
    fi
    ((n++))
  done
  case "$cmd $n" in
`)
	for _, c := range table {
		for i, list := range c.positional {
			if len(list) == 0 {
				continue
			}
			ids := ""
			if slices.Contains(list, sessionIDs) {
				ids = "$(_supervisor_ids)"
			}
			fmt.Fprintf(&b, "    \"%s %d\") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")) ;;\n", c.name, i, words(list, ids))
		}
	}
	b.WriteString(`  esac
}
complete -o default -F _supervisor supervisor
`)
	return b.String()
}

// shown is how flags are offered: --name, or -x for a one-letter name.
func shown(flags []string) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = f
		if len(f) == 3 {
			out[i] = f[1:]
		}
	}
	sort.Strings(out)
	return out
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// zshCompletion uses the bash function through zsh's bashcompinit, so both
// shells complete alike.
func zshCompletion(table []completionCmd) string {
	return `#compdef supervisor
# zsh completion for supervisor, generated by "supervisor completion zsh":
# the bash completion, through zsh's bashcompinit.
autoload -U +X bashcompinit && bashcompinit
` + bashCompletion(table)
}

func fishCompletion(table []completionCmd) string {
	var b strings.Builder
	b.WriteString(`# fish completion for supervisor, generated by "supervisor completion fish".
function __supervisor_ids
    supervisor ls -q 2>/dev/null
end

# __supervisor_arg CMD N: the command line is CMD with N positional
# arguments after it so far (flags and their values do not count).
function __supervisor_arg
    set -l tokens (commandline -opc)
    test (count $tokens) -ge 2; or return 1
    test "$tokens[2]" = $argv[1]; or return 1
    set -l n 0
    set -l skip 0
    for t in $tokens[3..-1]
        if test $skip -eq 1
            set skip 0
            continue
        end
        if string match -q -- '-*' $t
            if not string match -q -- '*=*' $t; and contains -- (string replace -r '^-+' -- '--' $t) $argv[3..-1]
                set skip 1
            end
            continue
        end
        set n (math $n + 1)
    end
    test $n -eq $argv[2]
end

complete -c supervisor -f
`)
	for _, c := range table {
		fmt.Fprintf(&b, "complete -c supervisor -n __fish_use_subcommand -a %s -d %s\n", c.name, fishString(c.summary))
	}
	fmt.Fprintf(&b, "complete -c supervisor -n __fish_use_subcommand -a help -d %s\n", fishString("show a command's flags"))
	for _, c := range table {
		for _, f := range c.boolFlags {
			fmt.Fprintf(&b, "complete -c supervisor -n '__fish_seen_subcommand_from %s' %s\n", c.name, fishFlag(f))
		}
		for _, f := range c.valueFlags {
			if vals, ok := flagValues[strings.TrimPrefix(f, "--")]; ok {
				fmt.Fprintf(&b, "complete -c supervisor -n '__fish_seen_subcommand_from %s' %s -x -a %q\n", c.name, fishFlag(f), strings.Join(vals, " "))
			} else {
				fmt.Fprintf(&b, "complete -c supervisor -n '__fish_seen_subcommand_from %s' %s -r -F\n", c.name, fishFlag(f))
			}
		}
		for i, list := range c.positional {
			if len(list) == 0 {
				continue
			}
			cand := words(list, "(__supervisor_ids)")
			fmt.Fprintf(&b, "complete -c supervisor -n '__supervisor_arg %s %d %s' -a %s\n", c.name, i, strings.Join(c.valueFlags, " "), fishQuote(cand, slices.Contains(list, sessionIDs)))
		}
	}
	fmt.Fprintf(&b, "complete -c supervisor -n '__fish_seen_subcommand_from help' -a %q\n", strings.Join(names(table), " "))
	return b.String()
}

// fishString quotes s for fish: single quotes, with \\ and \' escaped.
func fishString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// fishFlag is a flag's option for fish's complete: -l name, or -s x for a
// one-letter name (Go's flags take one dash or two alike).
func fishFlag(f string) string {
	name := strings.TrimPrefix(f, "--")
	if len(name) == 1 {
		return "-s " + name
	}
	return "-l " + name
}

// fishQuote quotes completion candidates for fish; a command substitution
// among them stays outside the quotes.
func fishQuote(cand string, withIDs bool) string {
	if !withIDs {
		return fmt.Sprintf("%q", cand)
	}
	plain := strings.TrimSpace(strings.TrimSuffix(cand, "(__supervisor_ids)"))
	if plain == "" {
		return "'(__supervisor_ids)'"
	}
	return fmt.Sprintf("'%s (__supervisor_ids)'", plain)
}
