package agent

import (
	"context"
	"errors"
	"net/url"
)

// ConnectionErrorHost returns the host:port a request failed to reach, if err is a transport error
// (refused, reset, closed, timed out) rather than an answer of the server: the work controller retries
// such a failure on a short fixed period, and ferry-agent's process quiets its logs during an outage.
func ConnectionErrorHost(err error) (string, bool) {
	var ue *url.Error
	if !errors.As(err, &ue) || errors.Is(ue.Err, context.Canceled) {
		return "", false
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil {
		return "", false
	}
	return u.Host, true
}
