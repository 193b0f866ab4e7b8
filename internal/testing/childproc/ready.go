package childproc

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// WaitReady polls http://<health>/readyz, as the kubelet's readiness probe does, until it answers 200
// or ctx is done; a run that exits first fails it at once, with the end of its log.
func (p *Process) WaitReady(ctx context.Context, health string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	url := "http://" + health + "/readyz"
	exited := p.Exited()
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		select {
		case <-exited:
			return false, fmt.Errorf("exited (%s):\n%s", p.State(), p.LogTail(20))
		default:
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil // not listening yet
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s not ready at %s (log: %s): %w", p.Name, url, p.Log, err)
	}
	return nil
}
