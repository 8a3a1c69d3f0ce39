package cli

import (
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// tidyDefaults rewrites the defaults --help shows for durations as people
// write them: 1m, not 1m0s; 1h30m, not 1h30m0s. A negative default is a
// "decided at run time" sentinel whose usage text says what happens; it
// is not shown (pflag hides a duration default of "0s"), never as -1ns.
func tidyDefaults(cmd *cobra.Command) {
	tidy := func(f *pflag.Flag) {
		if f.Value.Type() != "duration" {
			return
		}
		d, err := time.ParseDuration(f.DefValue)
		if err != nil {
			return
		}
		f.DefValue = shortDuration(d)
	}
	cmd.Flags().VisitAll(tidy)
	cmd.PersistentFlags().VisitAll(tidy)
	for _, c := range cmd.Commands() {
		tidyDefaults(c)
	}
}

// shortDuration is d without its zero trailing units; "0s" (which --help
// leaves out) when negative.
func shortDuration(d time.Duration) string {
	if d < 0 {
		return "0s"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
