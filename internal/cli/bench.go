package cli

import "github.com/spf13/cobra"

// newBenchCmd is replaced by the benchmark lab (issue 4).
func newBenchCmd() *cobra.Command {
	return &cobra.Command{Use: "bench", Short: "Run file-system benchmarks"}
}
