package docexamples

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// testFuncRE finds a test file's top-level test, benchmark, fuzz and
// example functions.
var testFuncRE = regexp.MustCompile(`(?m)^func ((Test|Benchmark|Fuzz|Example)\w*)\(`)

// CheckGoTests checks the `go test` examples of one block against the
// module at root even when they are not run (benchmarks and fuzzing take
// minutes): every package they name exists, and their -run, -bench and
// -fuzz patterns each match a function of theirs, so that a renamed
// benchmark cannot leave a dead command in the docs. A test binary built in
// the block (go test -c -o NAME.test PKG) is checked the same way when the
// block runs it (NAME.test -test.bench …). Other commands pass.
func CheckGoTests(root string, cmds []Command) error {
	binaries := map[string]string{} // NAME.test → its package
	for _, c := range cmds {
		for _, line := range strings.Split(c.Text, "\n") {
			words := strings.Fields(strings.ReplaceAll(line, `\`, " "))
			for i, w := range words {
				var err error
				switch {
				case w == "go" && i+1 < len(words) && words[i+1] == "test":
					err = checkGoTest(root, words[i+2:], binaries)
				case strings.HasSuffix(w, ".test") && binaries[filepath.Base(w)] != "":
					err = checkGoTest(root, append([]string{binaries[filepath.Base(w)]}, words[i+1:]...), nil)
				}
				if err != nil {
					return fmt.Errorf("line %d: %w", c.Line, err)
				}
			}
		}
	}
	return nil
}

func checkGoTest(root string, args []string, binaries map[string]string) error {
	patterns := map[string]string{} // flag → pattern
	var pkgs []string
	output := ""
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == ";" || a == "&&" || a == "||" || a == "|" || strings.HasPrefix(a, "#") {
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(strings.TrimLeft(a, "-"), "test."), "=")
		switch {
		case a == "-o" && i+1 < len(args):
			i++
			output = args[i]
		case strings.HasPrefix(a, "./"):
			pkgs = append(pkgs, a)
		case strings.HasPrefix(a, "-") && (name == "run" || name == "bench" || name == "fuzz"):
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			patterns[name] = strings.Trim(value, `'"`)
		}
	}
	if output != "" && binaries != nil && len(pkgs) == 1 {
		binaries[filepath.Base(output)] = pkgs[0]
	}
	var names []string
	for _, p := range pkgs {
		if strings.HasSuffix(p, "/...") {
			continue // a tree: any of its packages may hold the names
		}
		dir := filepath.Join(root, filepath.FromSlash(p))
		files, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
		if err != nil {
			return err
		}
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			return fmt.Errorf("go test names %s, which is not a package of the module", p)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			for _, m := range testFuncRE.FindAllStringSubmatch(string(raw), -1) {
				names = append(names, m[1])
			}
		}
	}
	if len(pkgs) == 0 || strings.HasSuffix(pkgs[0], "/...") {
		return nil
	}
	kinds := map[string][]string{"run": {"Test", "Fuzz", "Example"}, "bench": {"Benchmark"}, "fuzz": {"Fuzz"}}
	for flag, pattern := range patterns {
		if pattern == "^$" || pattern == "." || pattern == "" {
			continue
		}
		top, _, _ := strings.Cut(pattern, "/") // -run Test/subtest: the top level
		re, err := regexp.Compile(top)
		if err != nil {
			return fmt.Errorf("go test -%s %q: %w", flag, pattern, err)
		}
		if !matchesAny(re, names, kinds[flag]) {
			return fmt.Errorf("go test -%s %q matches no %s function in %s", flag, pattern, strings.Join(kinds[flag], "/"), strings.Join(pkgs, " "))
		}
	}
	return nil
}

func matchesAny(re *regexp.Regexp, names, prefixes []string) bool {
	for _, n := range names {
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) && re.MatchString(n) {
				return true
			}
		}
	}
	return false
}
