package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/corral-dev/corral/internal/creds"
	"github.com/corral-dev/corral/pkg/api"
)

const credsSummary = `Manage the credentials the supervisor hands its sessions' engines, in its
keyring (service dev.corral) or its credentials file (serve --credentials):
  ls          which items are set, and which engines use each
  set ITEM    store ITEM's secret, read from standard input (hidden when it is a
              terminal; one trailing newline is dropped); never from the command line
  rm ITEM     remove ITEM
Items: ` + "anthropic-api-key, openai-api-key, github-token" + `. A secret is never printed.`

func runCreds(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "creds", "ls | set ITEM | rm ITEM", credsSummary)
	c, pos, err := simple(e, fs, args, 1, 2)
	if err != nil {
		return err
	}
	verb := pos[0]
	want := map[string]int{"ls": 1, "set": 2, "rm": 2}
	n, ok := want[verb]
	if !ok {
		return usagef("unknown creds action %q: want ls, set or rm", verb)
	}
	if len(pos) != n {
		return usagef("creds %s takes %d argument(s)", verb, n-1)
	}
	var reply *api.CredentialsReply
	switch verb {
	case "ls":
		reply, err = c.Credentials(ctx)
	case "set":
		item := pos[1]
		if err := creds.CheckItem(item); err != nil {
			return usagef("%v", err)
		}
		secret, err := readSecret(e, item)
		if err != nil {
			return err
		}
		if reply, err = c.SetCredential(ctx, item, secret); err != nil {
			return err
		}
	case "rm":
		reply, err = c.DeleteCredential(ctx, pos[1])
	}
	if err != nil {
		return err
	}
	return e.emit(reply, func(w io.Writer) error {
		switch verb {
		case "set":
			_, err := fmt.Fprintf(w, "%s set in %s\n", pos[1], reply.Location)
			return err
		case "rm":
			_, err := fmt.Fprintf(w, "%s removed from %s\n", pos[1], reply.Location)
			return err
		}
		return credentialTable(w, reply)
	})
}

func credentialTable(w io.Writer, r *api.CredentialsReply) error {
	fmt.Fprintf(w, "Store: %s (%s)\n", r.Store, r.Location)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tSET\tENGINES")
	for _, it := range r.Items {
		set := "no"
		switch {
		case it.Error != "":
			set = "unknown: " + it.Error
		case it.Set:
			set = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", it.Item, set, strings.Join(it.Engines, ", "))
	}
	return tw.Flush()
}

// readSecret reads one secret from standard input: without echo when it is
// a terminal, else all of it (bounded), less one trailing newline.
func readSecret(e *env, item string) (string, error) {
	if f, ok := e.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(e.stderr, "Secret for %s (input hidden): ", item)
		raw, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(e.stderr)
		if err != nil {
			return "", fmt.Errorf("read the secret: %w", err)
		}
		return string(raw), nil
	}
	raw, err := io.ReadAll(io.LimitReader(bufio.NewReader(e.stdin), creds.MaxSecret+2))
	if err != nil {
		return "", fmt.Errorf("read the secret from standard input: %w", err)
	}
	s := strings.TrimSuffix(strings.TrimSuffix(string(raw), "\n"), "\r")
	if s == "" {
		return "", errors.New("no secret on standard input (pipe it in, e.g. supervisor creds set ITEM < file)")
	}
	return s, nil
}
