package main

import (
	"context"
	"fmt"
	"io"

	"k8s.io/klog/v2"
	"k8s.io/klog/v2/textlogger"

	"github.com/ferry-mc/ferry/pkg/agent/process"
)

// installLogger makes klog — through which client-go's informers and the agent's controllers log —
// write klog's text format to out at the verbosity of -v and --vmodule, with the connection errors of
// an API server outage folded into a line when it starts and one when it ends
// (process.WithQuietOutages). If the hub or spoke configuration cannot be read, the plain logger stays,
// and process.Run reports what is wrong with it.
func installLogger(ctx context.Context, o *process.Options, out io.Writer) error {
	cfg := textlogger.NewConfig(textlogger.Output(out), textlogger.Verbosity(o.Verbosity))
	if o.VModule != "" {
		if err := cfg.VModule().Set(o.VModule); err != nil {
			return fmt.Errorf("--vmodule %s: %w", o.VModule, err)
		}
	}
	base := textlogger.NewLogger(cfg)
	log, err := process.WithQuietOutages(ctx, o, base)
	if err != nil {
		log = base
	}
	klog.SetLoggerWithOptions(log, klog.ContextualLogger(true))
	return nil
}
