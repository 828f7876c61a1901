package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/corral-dev/corral/internal/console/gateway"
	"github.com/corral-dev/corral/internal/supervisor/daemon"
	"github.com/corral-dev/corral/pkg/client"
)

const consoleSummary = `Open the web console for a supervisor that listens on its unix socket (or on
--url). Starts a loopback listener that forwards to the supervisor, prints its
address with a one-time sign-in code on stdout (the link works once), and
opens it in a browser when one can be started. Runs until interrupted; a
restart of the supervisor behind it only pauses the page.`

func runConsole(ctx context.Context, e *env, args []string) error {
	fs := newFlags(e, "console", "[ID]", consoleSummary)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to listen on (port 0: a free one)")
	open := fs.Bool("open", true, "start a browser on the link (xdg-open, or open on macOS) when one is found")
	var cn conn
	cn.register(fs)
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		fs.Usage()
		return usagef("wrong number of arguments")
	}
	up, err := cn.upstream()
	if err != nil {
		return err
	}
	c, err := cn.client()
	if err != nil {
		return err
	}
	// Fail now, saying why, rather than serve a page that cannot load.
	if _, err := c.Health(ctx); err != nil {
		return err
	}
	id := ""
	if len(pos) == 1 {
		id = pos[0]
		if _, err := c.Session(ctx, id); err != nil {
			return err
		}
	}
	g, err := gateway.New(gateway.Config{Listen: *listen, Upstream: up})
	if err != nil {
		return err
	}
	link := g.URL(id)
	if err := e.emit(map[string]string{"url": link}, func(w io.Writer) error { _, err := fmt.Fprintln(w, link); return err }); err != nil {
		g.Close()
		return err
	}
	fmt.Fprintln(e.stderr, "Corral console: open the link above (it signs one browser in, once). Ctrl-C stops the console.")
	if *open {
		openBrowser(e, link)
	}
	return g.Serve(ctx)
}

// upstream says where the gateway forwards: the socket, or --url with its
// token.
func (c *conn) upstream() (gateway.Upstream, error) {
	state, err := client.StateDir(c.state)
	if err != nil {
		return gateway.Upstream{}, err
	}
	if c.url == "" {
		return gateway.Upstream{Socket: filepath.Join(state, client.SocketName)}, nil
	}
	file := c.tokenFile
	if file == "" {
		file = filepath.Join(state, daemon.TokenName)
	}
	token, err := daemon.ReadToken(file)
	if err != nil {
		return gateway.Upstream{}, err
	}
	return gateway.Upstream{BaseURL: c.url, Token: token}, nil
}

// openBrowser starts the desktop's browser on link, when there is one; it
// never fails the command (the link is printed anyway).
func openBrowser(e *env, link string) {
	name := "xdg-open"
	if runtime.GOOS == "darwin" {
		name = "open"
	} else if os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		return
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return
	}
	cmd := exec.Command(path, link)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "could not start a browser (%v); open the link by hand\n", err)
		return
	}
	go cmd.Wait()
}
