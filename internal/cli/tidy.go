package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// tidyCommands makes every command of the tree under cmd behave alike
// (docs/cli.md): --help defaults in human units, and exit code 2 for
// every usage error, cobra's argument checks and a missing or unknown
// subcommand included.
func tidyCommands(cmd *cobra.Command) {
	tidyDefaults(cmd)
	usageArgs(cmd)
}

// usageArgs marks the errors of argument checks as usage errors, and
// gives commands that only group others (quota, key) a run function that
// refuses a missing or unknown subcommand.
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error { return withCode(ExitUsage, check(c, args)) }
	}
	if cmd.HasSubCommands() && cmd.Run == nil && cmd.RunE == nil && cmd.HasParent() {
		cmd.Args = cobra.ArbitraryArgs
		cmd.RunE = func(c *cobra.Command, args []string) error {
			var names []string
			for _, sub := range c.Commands() {
				if sub.IsAvailableCommand() {
					names = append(names, sub.Name())
				}
			}
			what := "needs a subcommand"
			if len(args) > 0 {
				what = fmt.Sprintf("has no subcommand %q", args[0])
			}
			return withCode(ExitUsage, fmt.Errorf("%s %s: use %s (see '%s --help')", c.CommandPath(), what, strings.Join(names, ", "), c.CommandPath()))
		}
	}
	for _, c := range cmd.Commands() {
		usageArgs(c)
	}
}

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
