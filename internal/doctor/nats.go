package doctor

import (
	"context"
	"net/url"

	"github.com/nats-io/nats.go"
)

// checkNATS connects to each of the fleet's NATS servers: the TCP
// connection, the server's INFO, CONNECT and a PING answered.
func checkNATS(_ context.Context, cfg Config) []Result {
	return each(cfg.NATS, func(server string) Result { return checkNATSServer(server, cfg) })
}

func checkNATSServer(server string, cfg Config) Result {
	check := "nats " + redact(server)
	nc, err := nats.Connect(server, nats.Timeout(cfg.Timeout), nats.NoReconnect(), nats.Name("corral doctor"),
		nats.NoCallbacksAfterClientClose())
	if err != nil {
		return failed(check, "check that the server runs and that this host reaches it (address, port, firewall, TLS, credentials)", "%v", err)
	}
	defer nc.Close()
	if err := nc.FlushTimeout(cfg.Timeout); err != nil {
		return failed(check, "check the server's health (nats-server logs)", "no answer to PING: %v", err)
	}
	return ok(check, "connected to %s (server %s, version %s, JetStream %v)", nc.ConnectedUrlRedacted(), nc.ConnectedServerName(), nc.ConnectedServerVersion(), jetStream(nc))
}

func jetStream(nc *nats.Conn) bool {
	js, err := nc.JetStream()
	if err != nil {
		return false
	}
	_, err = js.AccountInfo()
	return err == nil
}

// redact drops a password from a URL before it is printed.
func redact(server string) string {
	u, err := url.Parse(server)
	if err != nil || u.User == nil {
		return server
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
