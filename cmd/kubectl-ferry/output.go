package main

import (
	"errors"
	"time"

	"github.com/spf13/pflag"

	"github.com/ferry-mc/ferry/internal/statusview"
)

// outputOptions are how a view is shown: in which format, once or followed, and for how long.
type outputOptions struct {
	format string
	watch  bool
	// until: follow until the view's verdict is reached or fails (--until-healthy; `rollout status
	// --watch`), rather than until interrupted.
	until   bool
	timeout time.Duration
}

// addFlags adds the output flags; withVerdict adds --until-healthy, for views that have a health verdict.
func (o *outputOptions) addFlags(fs *pflag.FlagSet, withVerdict bool) {
	o.addFormatFlag(fs)
	fs.BoolVarP(&o.watch, "watch", "w", false, "After printing the view, watch the objects it is made of and print it again whenever it changes, until interrupted (or --timeout).")
	if !withVerdict {
		fs.DurationVar(&o.timeout, "timeout", 0, "With --watch: stop after this long (0: no limit).")
		return
	}
	fs.DurationVar(&o.timeout, "timeout", 0, "With --watch or --until-healthy: stop after this long (0: no limit); with --until-healthy, fail then, naming what is not healthy.")
	fs.BoolVar(&o.until, "until-healthy", false, "Watch (implies --watch) and exit 0 once every manifest is applied, available and Healthy; for scripts.")
}

// addRolloutFlags adds the output flags of `rollout status`, whose --watch, as kubectl rollout
// status's, ends when the rollout does; the command sets o.until to o.watch.
func (o *outputOptions) addRolloutFlags(fs *pflag.FlagSet) {
	o.addFormatFlag(fs)
	fs.BoolVarP(&o.watch, "watch", "w", false, "After printing the rollout, print it again whenever it changes: exit 0 once it is Complete for the AppConfig's current generation, 1 once it halted or rolled back.")
	fs.DurationVar(&o.timeout, "timeout", 0, "With --watch: fail after this long (0: no limit), saying what the rollout waits for.")
}

func (o *outputOptions) addFormatFlag(fs *pflag.FlagSet) {
	fs.StringVarP(&o.format, "output", "o", "", "json or yaml: print the view's data model (documented in internal/statusview) instead of a table.")
}

// follows says whether the view is followed rather than printed once.
func (o *outputOptions) follows() bool { return o.watch || o.until }

func (o *outputOptions) validate() error {
	if err := statusview.CheckFormat(o.format); err != nil {
		return err
	}
	if o.timeout < 0 {
		return errors.New("--timeout must not be negative")
	}
	if o.timeout > 0 && !o.follows() {
		return errors.New("--timeout bounds a watch (--watch, --until-healthy); give one (or --request-timeout, for a single read)")
	}
	return nil
}
