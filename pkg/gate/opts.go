package gate

import (
	"slices"
	"strings"
)

// optSpec tells scanOpts which options of a command take a value.
type optSpec struct {
	short string   // short options that take a value, such as "tS"
	long  []string // long options that take a value, without "--"
	// posix stops at the first operand, as wrappers do: what follows
	// is the wrapped command and its own options.
	posix bool
}

// option is one option found by scanOpts.
type option struct {
	name     string // "-t" or "--target-directory"
	value    string
	hasValue bool
	// valueIdx is the index of the word holding the value, or -1 when
	// the value was attached (-tDIR, --target-directory=DIR).
	valueIdx int
	idx      int // index of the option's own word
}

// scanOpts splits words[start:] into options and operands the way
// getopt_long does. A word whose value is not known is an operand, since
// the gate cannot tell. ok is false when an option lacks its value.
func scanOpts(words []word, start int, spec optSpec) (opts []option, operands []int, ok bool) {
	for i := start; i < len(words); i++ {
		w := words[i]
		switch {
		case !w.known() || w.value == "-" || !strings.HasPrefix(w.value, "-"):
			operands = append(operands, i)
			if spec.posix {
				for k := i + 1; k < len(words); k++ {
					operands = append(operands, k)
				}
				return opts, operands, true
			}
		case w.value == "--":
			for k := i + 1; k < len(words); k++ {
				operands = append(operands, k)
			}
			return opts, operands, true
		case strings.HasPrefix(w.value, "--"):
			name, value, attached := strings.Cut(w.value[2:], "=")
			o := option{name: "--" + name, idx: i, valueIdx: -1}
			if attached {
				o.value, o.hasValue = value, true
			} else if slices.Contains(spec.long, name) {
				if i+1 >= len(words) {
					return opts, operands, false
				}
				i++
				o.value, o.hasValue, o.valueIdx = words[i].value, true, i
			}
			opts = append(opts, o)
		default:
			cluster := w.value[1:]
			for k := 0; k < len(cluster); k++ {
				o := option{name: "-" + cluster[k:k+1], idx: i, valueIdx: -1}
				if strings.IndexByte(spec.short, cluster[k]) >= 0 {
					if rest := cluster[k+1:]; rest != "" {
						o.value, o.hasValue = rest, true
					} else {
						if i+1 >= len(words) {
							return opts, operands, false
						}
						i++
						o.value, o.hasValue, o.valueIdx = words[i].value, true, i
					}
					opts = append(opts, o)
					break
				}
				opts = append(opts, o)
			}
		}
	}
	return opts, operands, true
}

// hasOpt reports whether any of names was given.
func hasOpt(opts []option, names ...string) bool {
	for _, o := range opts {
		if slices.Contains(names, o.name) {
			return true
		}
	}
	return false
}

// optValues returns the values given to any of names, with the index of
// the word holding each (-1 when attached).
func optValues(opts []option, names ...string) []option {
	var out []option
	for _, o := range opts {
		if o.hasValue && slices.Contains(names, o.name) {
			out = append(out, o)
		}
	}
	return out
}
