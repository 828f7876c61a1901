// Package docexamples finds the shell examples in Corral's Markdown (README.md
// and docs/*.md) and turns them into scripts that a test runs as written, so
// that a document that drifts from the program fails a test instead of a
// reader.
//
// Every fenced block whose info string is sh, bash, shell or console is an
// example. Each of its commands runs, unless the Markdown says, visibly, why
// it does not:
//
//	bin/supervisor watch $id     # a live transcript [not run: interactive]
//	# [not run: needs root and systemd]   (every later command of the block)
//	bin/supervisor doctor        # [exits 1]
//
// "[not run: REASON]" in a command's comment leaves that command out; on a
// comment line of its own it leaves out every later command of the block.
// "[exits N]" (or "[exits N: REASON]") is the exit status the command is
// documented to end with; without it the command must exit 0. In a console
// block only the lines that start with "$ " are commands. A marker without a
// reason, or a block that is not valid shell, is an error: an example is
// either run or says why not, never silently passed over.
package docexamples

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Command is one shell statement of an example.
type Command struct {
	// Line is the Markdown line the statement starts on.
	Line int
	// Text is the statement as written, without its comments.
	Text string
	// Background is set for a statement that ends in &.
	Background bool
	// Skip is why the command is not run; empty when it runs.
	Skip string
	// Exit is the exit status the docs give it.
	Exit int
}

// Block is one fenced shell block.
type Block struct {
	// Line is the Markdown line of the opening fence.
	Line     int
	Info     string
	Commands []Command
}

var shellInfo = map[string]bool{"sh": true, "bash": true, "shell": true, "console": true}

var (
	notRunRE = regexp.MustCompile(`\[not run(?::\s*([^\]]*))?\]`)
	exitsRE  = regexp.MustCompile(`\[exits\s*([^\]:]*)(?::[^\]]*)?\]`)
)

// Extract returns the shell examples of the Markdown document src; name
// prefixes its errors.
func Extract(name, src string) ([]Block, error) {
	var blocks []Block
	var cur *Block
	var body []string
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if fence == "" {
			if f, info, ok := openingFence(trimmed); ok {
				fence = f
				if shellInfo[info] || info == "" {
					cur = &Block{Line: n, Info: info}
					body = nil
				}
			}
			continue
		}
		if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
			fence = ""
			if cur != nil && cur.Info == "" {
				if err := untagged(body); err != nil {
					return nil, fmt.Errorf("%s:%d: %w", name, cur.Line, err)
				}
				cur = nil
			}
			if cur != nil {
				cmds, err := commands(*cur, body)
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %w", name, cur.Line, err)
				}
				cur.Commands = cmds
				blocks = append(blocks, *cur)
				cur = nil
			}
			continue
		}
		if cur != nil {
			body = append(body, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the %s block is not closed", name, cur.Line, cur.Info)
	}
	return blocks, nil
}

// untagged refuses a block without an info string that holds commands to
// run: a prompt ("$ ") or a go test line would escape the check untagged.
// A synopsis (supervisor watch [ID] [--plain]) is not a command to run and
// passes.
func untagged(body []string) error {
	for _, l := range body {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "$ ") || strings.HasPrefix(t, "go test ") {
			return fmt.Errorf("a block of shell commands without an info string: mark it sh or console, so its commands are run or say why not")
		}
	}
	return nil
}

// openingFence reports whether line (trimmed) opens a fenced block: three
// or more backticks or tildes. It returns the fence and the first word of
// the info string.
func openingFence(line string) (fence, info string, ok bool) {
	for _, c := range []string{"`", "~"} {
		if !strings.HasPrefix(line, c+c+c) {
			continue
		}
		n := len(line) - len(strings.TrimLeft(line, c))
		rest := strings.TrimSpace(line[n:])
		if c == "`" && strings.Contains(rest, "`") {
			return "", "", false // inline code, not a fence
		}
		if f := strings.Fields(rest); len(f) > 0 {
			info = strings.ToLower(f[0])
		}
		return line[:n], info, true
	}
	return "", "", false
}

// comment is one shell comment of a block.
type comment struct {
	line  int  // within the block, from 1
	alone bool // on a line of its own
	text  string
}

// commands parses a block's body (the lines after its opening fence) into
// statements with their markers.
func commands(b Block, body []string) ([]Command, error) {
	lines := body
	if b.Info == "console" {
		lines = consoleCommands(body)
	}
	text := strings.Join(lines, "\n") + "\n"
	f, err := syntax.NewParser(syntax.KeepComments(true), syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	if err != nil {
		return nil, fmt.Errorf("the %s block is not valid shell: %w", b.Info, err)
	}
	var comments []comment
	syntax.Walk(f, func(n syntax.Node) bool {
		if c, ok := n.(*syntax.Comment); ok {
			l, col := int(c.Pos().Line()), int(c.Pos().Col())
			before := ""
			if l-1 < len(lines) && col-1 <= len(lines[l-1]) {
				before = lines[l-1][:col-1]
			}
			comments = append(comments, comment{line: l, alone: strings.TrimSpace(before) == "", text: c.Text})
		}
		return true
	})
	lastLine := 0
	if len(f.Stmts) > 0 {
		lastLine = int(f.Stmts[len(f.Stmts)-1].End().Line())
	}
	// A marker on a comment line of its own applies from there on; one after
	// the last command marks nothing, which is a mistake.
	for _, c := range comments {
		skip, exit, err := markers(c.text)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", b.Line+c.line, err)
		}
		if c.alone && c.line > lastLine && (skip != "" || exit != 0) {
			return nil, fmt.Errorf("line %d: a marker after the block's last command marks nothing", b.Line+c.line)
		}
		if c.alone && exit != 0 {
			return nil, fmt.Errorf("line %d: [exits N] belongs in the comment of the command it is about", b.Line+c.line)
		}
	}
	printer := syntax.NewPrinter()
	var out []Command
	for _, st := range f.Stmts {
		first, last := int(st.Pos().Line()), int(st.End().Line())
		cmd := Command{Line: b.Line + first, Background: st.Background}
		for _, c := range comments {
			skip, exit, _ := markers(c.text)
			switch {
			case c.alone && c.line < first:
				if skip != "" {
					cmd.Skip = skip
				}
			case !c.alone && c.line >= first && c.line <= last:
				if skip != "" {
					cmd.Skip = skip
				}
				if exit != 0 {
					cmd.Exit = exit
				}
			}
		}
		bare := *st
		bare.Comments = nil
		var sb strings.Builder
		if err := printer.Print(&sb, &bare); err != nil {
			return nil, fmt.Errorf("line %d: %w", cmd.Line, err)
		}
		cmd.Text = strings.TrimSpace(sb.String())
		out = append(out, cmd)
	}
	return out, nil
}

// consoleCommands keeps a console block's "$ " lines (and the lines that
// continue them) as commands and blanks the output lines, so that line
// numbers stay those of the Markdown.
func consoleCommands(body []string) []string {
	out := make([]string, len(body))
	cont := false
	for i, l := range body {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "$ "):
			out[i] = strings.TrimPrefix(t, "$ ")
		case cont:
			out[i] = l
		default:
			continue
		}
		cont = strings.HasSuffix(strings.TrimSpace(out[i]), `\`)
	}
	return out
}

// markers reads the [not run: …] and [exits N] markers of one comment.
func markers(comment string) (skip string, exit int, err error) {
	if m := notRunRE.FindStringSubmatch(comment); m != nil {
		if skip = strings.TrimSpace(m[1]); skip == "" {
			return "", 0, fmt.Errorf("%q: [not run] needs a reason: [not run: REASON]", comment)
		}
	}
	if m := exitsRE.FindStringSubmatch(comment); m != nil {
		n, convErr := strconv.Atoi(strings.TrimSpace(m[1]))
		if convErr != nil || n < 1 || n > 255 {
			return "", 0, fmt.Errorf("%q: [exits N] needs an exit status from 1 to 255", comment)
		}
		exit = n
	}
	return skip, exit, nil
}
