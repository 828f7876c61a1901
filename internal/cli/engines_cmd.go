package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/corral-dev/corral/pkg/api"
	"github.com/corral-dev/corral/pkg/client"
)

func runEngines(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "engines", "", "Show the engines a session may run on, whether a session on each could start (its CLI found and supported, the credential it needs present), and why not. The supervisor keeps the answer for a minute.")
	var opts client.EnginesOptions
	fs.BoolVar(&opts.Refresh, "refresh", false, "check again now")
	fs.BoolVar(&opts.Accepted, "check-accepted", false, "also try each credential against the model endpoint (sends it there)")
	fs.StringVar(&opts.ModelEndpoint, "model-endpoint", "", "the endpoint --check-accepted tries (default: each engine's own)")
	verbose := fs.Bool("v", false, "also list each engine's checks, models and settings")
	c, _, err := simple(e, fs, args, 0, 0)
	if err != nil {
		return err
	}
	r, err := c.Engines(ctx, opts)
	if err != nil {
		return err
	}
	return e.emit(r, func(w io.Writer) error { return engineTable(w, r, *verbose) })
}

func engineTable(w io.Writer, r *api.EnginesReply, verbose bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENGINE\tREADY\tCLI\tWHY NOT")
	for _, eng := range r.Engines {
		ready := "yes"
		if !eng.Ready {
			ready = "no"
		}
		cli := "built in"
		if eng.CLI != nil {
			cli = eng.CLI.Program + " " + eng.CLI.Version
			if eng.CLI.Path == "" {
				cli = eng.CLI.Program + " (not found)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", eng.Name, ready, strings.TrimSpace(cli), eng.Reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if !verbose {
		return nil
	}
	for _, eng := range r.Engines {
		fmt.Fprintf(w, "\n%s: %s\n", eng.Name, eng.Summary)
		for _, ch := range eng.Checks {
			fmt.Fprintf(w, "  %-11s %-7s %s\n", ch.Name, ch.Status, ch.Detail)
		}
		var models []string
		for _, m := range eng.Models {
			models = append(models, m.ID)
		}
		if len(models) > 0 {
			fmt.Fprintf(w, "  models: %s\n", strings.Join(models, ", "))
		}
		for _, s := range eng.Settings {
			fmt.Fprintf(w, "  setting %s (%s): %s\n", s.Key, settingType(s), s.Doc)
		}
	}
	return nil
}

// settingType describes a setting's type for people.
func settingType(s api.EngineSetting) string {
	switch {
	case len(s.Values) > 0:
		return strings.Join(s.Values, "|")
	case s.Path:
		return "absolute path"
	}
	return string(s.Type)
}
