package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"shoal/internal/bench"
	"shoal/internal/bench/progress"
	"shoal/internal/bench/report"
	"shoal/internal/bench/result"
	"shoal/internal/bench/workload"
)

// benchWorkloads are the workload names `shoal bench` accepts, in run order.
var benchWorkloads = []string{"iozone", "bonnie", "postmark", "mass", "hugedir"}

// benchFlags holds every `shoal bench` flag. Sizes are strings parsed by
// workload.ParseSize so "4k", "100MiB" and "1g" all work.
type benchFlags struct {
	rounds, clients int
	quick           bool
	jsonOut         bool
	htmlFile        string
	progress        string
	dropCaches      bool
	seed            uint64

	ioWorkers                  int
	ioSize, ioRecord           string
	ioTests                    []string
	ioAuto, ioClose, ioFsync   bool
	ioAutoMin, ioAutoMax       string
	ioAutoMinRec, ioAutoMaxRec string

	bnSize, bnChunk, bnFileSize string
	bnFiles, bnDirs             int

	pmSize, pmReadBlock, pmWriteBlock string
	pmFiles, pmTx, pmSubdirs          int
	pmReadBias, pmCreateBias          int

	massFiles int
	massSize  string

	hugeEntries int
}

// quickDefaults are the sizes --quick uses for flags left unset: every
// workload runs in seconds (for tests and CI, not for real figures).
var quickDefaults = map[string]string{
	"rounds": "2", "iozone-workers": "2", "iozone-size": "4MiB", "iozone-auto-max": "256KiB",
	"bonnie-size": "8MiB", "bonnie-files": "256",
	"postmark-size": "1KiB-16KiB", "postmark-files": "200", "postmark-transactions": "400",
	"mass-files": "500", "mass-size": "1KiB-16KiB", "hugedir-entries": "2000",
}

func newBenchCmd() *cobra.Command {
	f := &benchFlags{}
	cmd := &cobra.Command{
		Use:   "bench [WORKLOAD...] [NAME=]DIR[,DIR...]...",
		Short: "Run file-system benchmarks on any directories, side by side",
		Long: `Run iozone-, bonnie++- and PostMark-style benchmarks, mass file creation and
a huge directory against one or more directories (a Shoal mount, the local
disk, any other mount), interleaved round by round so the comparison is fair.

WORKLOAD is any of: ` + strings.Join(benchWorkloads, ", ") + ` (default: all).
Each further argument is a target: a directory, NAME=DIR to label it, or
DIR1,DIR2,... to spread the clients over several directories (one mount
point per machine or namespace) with a common start. Ratios are to the first
target. Every read is verified, so wrong data is an error, not a result.
See docs/bench.md.`,
		Example: `  shoal bench /tmp /mnt/shoal
  shoal bench iozone postmark local=/var/tmp shoal=/mnt/shoal --html report.html
  shoal bench --quick --json /tmp`,
		RunE: func(cmd *cobra.Command, args []string) error { return runBench(cmd, f, args) },
	}
	f.register(cmd.Flags())
	return cmd
}

// register declares the flags; defaults are the real workloads of issue 4.
func (f *benchFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&f.rounds, "rounds", 3, "interleaved rounds per target (figures are medians over rounds)")
	fs.IntVar(&f.clients, "clients", 1, "parallel clients per target, each in its own subdirectory")
	fs.BoolVar(&f.quick, "quick", false, "small sizes so every workload takes seconds (flags given still win)")
	fs.BoolVar(&f.jsonOut, "json", false, "print the report as JSON on stdout instead of the table")
	fs.StringVar(&f.htmlFile, "html", "", "also write a self-contained HTML report to `FILE`")
	fs.StringVar(&f.progress, "progress", "auto", "progress bars on stderr: auto (when a terminal), always, never")
	fs.Lookup("progress").NoOptDefVal = "always"
	fs.BoolVar(&f.dropCaches, "drop-caches", true, "drop the page cache before cold phases (needs root)")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the data and of every random choice")

	fs.IntVar(&f.ioWorkers, "iozone-workers", 5, "iozone: files written and read in parallel per client (-l/-u)")
	fs.StringVar(&f.ioSize, "iozone-size", "100MiB", "iozone: file size (-s)")
	fs.StringVar(&f.ioRecord, "iozone-record", "4KiB", "iozone: record size (-r)")
	fs.StringSliceVar(&f.ioTests, "iozone-tests", nil, "iozone: tests to run (default all: "+strings.Join(workload.IozoneTests, ", ")+")")
	fs.BoolVar(&f.ioClose, "include-close", false, "iozone: include close() in the timing (-c)")
	fs.BoolVar(&f.ioFsync, "iozone-fsync", false, "iozone: fsync before close, timed (-e)")
	fs.BoolVar(&f.ioAuto, "iozone-auto", false, "iozone: automatic mode over file and record sizes (-a)")
	fs.StringVar(&f.ioAutoMin, "iozone-auto-min", "64KiB", "iozone: smallest file in automatic mode (-n)")
	fs.StringVar(&f.ioAutoMax, "iozone-auto-max", "512MiB", "iozone: largest file in automatic mode (-g)")
	fs.StringVar(&f.ioAutoMinRec, "iozone-auto-min-record", "4KiB", "iozone: smallest record in automatic mode (-y)")
	fs.StringVar(&f.ioAutoMaxRec, "iozone-auto-max-record", "16MiB", "iozone: largest record in automatic mode (-q)")

	fs.StringVar(&f.bnSize, "bonnie-size", "1GiB", "bonnie: size of the block-I/O file (-s)")
	fs.StringVar(&f.bnChunk, "bonnie-chunk", "8KiB", "bonnie: chunk size of block I/O (-s SIZE:CHUNK)")
	fs.IntVar(&f.bnFiles, "bonnie-files", 16384, "bonnie: number of small files (-n, times 1024 there)")
	fs.StringVar(&f.bnFileSize, "bonnie-file-size", "0", "bonnie: small file size or MIN-MAX range (-n :MAX:MIN)")
	fs.IntVar(&f.bnDirs, "bonnie-dirs", 0, "bonnie: subdirectories for the small files (-n :::DIRS)")

	fs.StringVar(&f.pmSize, "postmark-size", "1KiB-256KiB", "postmark: file size range (set size)")
	fs.IntVar(&f.pmFiles, "postmark-files", 5000, "postmark: files in the pool (set number)")
	fs.IntVar(&f.pmTx, "postmark-transactions", 10000, "postmark: transactions (set transactions)")
	fs.StringVar(&f.pmReadBlock, "postmark-read-block", "8KiB", "postmark: read block size (set read)")
	fs.StringVar(&f.pmWriteBlock, "postmark-write-block", "8KiB", "postmark: write block size (set write)")
	fs.IntVar(&f.pmReadBias, "postmark-read-bias", 7, "postmark: reads per 10 read-or-append choices (set bias read)")
	fs.IntVar(&f.pmCreateBias, "postmark-create-bias", 3, "postmark: creates per 10 create-or-delete choices (set bias create)")
	fs.IntVar(&f.pmSubdirs, "postmark-subdirs", 0, "postmark: subdirectories (set subdirectories)")

	fs.IntVar(&f.massFiles, "mass-files", 10000, "mass: files created in one directory")
	fs.StringVar(&f.massSize, "mass-size", "1KiB-64KiB", "mass: size range of the sized files")

	fs.IntVar(&f.hugeEntries, "hugedir-entries", 100000, "hugedir: entries in the one directory")
}

// applyQuick sets the --quick sizes for the flags the user did not give.
func applyQuick(fs *pflag.FlagSet) error {
	for name, v := range quickDefaults {
		if !fs.Changed(name) {
			if err := fs.Set(name, v); err != nil {
				return err
			}
		}
	}
	return nil
}

func runBench(cmd *cobra.Command, f *benchFlags, args []string) error {
	if f.quick {
		if err := applyQuick(cmd.Flags()); err != nil {
			return withCode(ExitUsage, err)
		}
	}
	names, targets, err := splitBenchArgs(args)
	if err != nil {
		return err
	}
	ws, err := f.workloads(names)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal stops the run (cleaning up, writing the report); a
	// second one, for a file system that hangs, kills the process.
	go func() { <-ctx.Done(); stop() }()
	opts := bench.Options{
		Targets: targets, Workloads: ws, Rounds: f.rounds, Clients: f.clients,
		DropCaches: f.dropCaches, Seed: f.seed, Command: strings.Join(os.Args, " "),
	}
	if opts.Progress, err = f.display(cmd.ErrOrStderr()); err != nil {
		return withCode(ExitUsage, err)
	}
	rep := bench.Run(ctx, opts)
	if err := writeReports(cmd.OutOrStdout(), cmd.ErrOrStderr(), f, rep); err != nil {
		return err
	}
	return benchOutcome(ctx, rep)
}

// benchOutcome turns failed measurements or an interruption into exit 1.
func benchOutcome(ctx context.Context, rep *result.Report) error {
	if ctx.Err() != nil {
		return errors.New("bench: interrupted")
	}
	if rep.Errors > 0 {
		return fmt.Errorf("bench: %d measurement(s) failed (see the report)", rep.Errors)
	}
	return nil
}

// splitBenchArgs separates leading workload names from target arguments
// and checks that every target directory exists.
func splitBenchArgs(args []string) ([]string, []bench.Target, error) {
	var names []string
	for len(args) > 0 && isWorkload(args[0]) {
		names, args = append(names, args[0]), args[1:]
	}
	if len(args) == 0 {
		return nil, nil, withCode(ExitUsage, errors.New("bench: no directory given"))
	}
	var targets []bench.Target
	seen := map[string]bool{}
	for _, a := range args {
		t, err := bench.ParseTarget(a)
		if err != nil {
			return nil, nil, withCode(ExitUsage, err)
		}
		if seen[t.Name] {
			return nil, nil, withCode(ExitUsage, fmt.Errorf("bench: target %q given twice", t.Name))
		}
		seen[t.Name] = true
		for _, d := range t.Dirs {
			if st, err := os.Stat(d); err != nil || !st.IsDir() {
				return nil, nil, withCode(ExitNotFound, fmt.Errorf("bench: %s is not a directory", d))
			}
		}
		targets = append(targets, t)
	}
	return names, targets, nil
}

func isWorkload(s string) bool {
	if s == "all" {
		return true
	}
	for _, w := range benchWorkloads {
		if s == w {
			return true
		}
	}
	return false
}

// display builds the progress display the --progress flag asks for.
func (f *benchFlags) display(w io.Writer) (*progress.Display, error) {
	tty := false
	if file, ok := w.(*os.File); ok {
		tty = progress.IsTerminal(file)
	}
	switch f.progress {
	case "never":
		return nil, nil
	case "always":
		return progress.New(w, tty), nil
	case "auto":
		if tty {
			return progress.New(w, true), nil
		}
		return nil, nil
	}
	return nil, withCode(ExitUsage, fmt.Errorf("bench: --progress %q: want auto, always or never", f.progress))
}

// writeReports prints the table or JSON and writes the HTML file, saying
// where on errOut (stdout may be JSON).
func writeReports(out, errOut io.Writer, f *benchFlags, rep *result.Report) error {
	var err error
	if f.jsonOut {
		err = report.JSON(out, rep)
	} else {
		err = report.Table(out, rep)
	}
	if err != nil {
		return fmt.Errorf("bench: writing the report: %w", err)
	}
	if f.htmlFile == "" {
		return nil
	}
	file, err := os.Create(f.htmlFile)
	if err != nil {
		return err
	}
	err = report.HTML(file, rep)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bench: writing %s: %w", f.htmlFile, err)
	}
	where, err := filepath.Abs(f.htmlFile)
	if err != nil {
		where = f.htmlFile
	}
	fmt.Fprintf(errOut, "HTML report written to %s\n", where)
	return nil
}

// workloads builds the chosen workloads (none or "all": every one) from
// the flags.
func (f *benchFlags) workloads(names []string) ([]workload.Workload, error) {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	all := len(names) == 0 || want["all"]
	var out []workload.Workload
	for _, n := range benchWorkloads {
		if !all && !want[n] {
			continue
		}
		w, err := f.build(n)
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", n, err)
		}
		out = append(out, w)
	}
	return out, nil
}

// build makes one workload from its flags.
func (f *benchFlags) build(name string) (workload.Workload, error) {
	p := &sizeParser{}
	var w workload.Workload
	switch name {
	case "iozone":
		if err := workload.CheckTests(f.ioTests); err != nil {
			return nil, err
		}
		w = &workload.Iozone{
			Workers: f.ioWorkers, FileSize: p.size(f.ioSize), Record: int(p.size(f.ioRecord)),
			Tests: f.ioTests, IncludeClose: f.ioClose, Fsync: f.ioFsync, Auto: f.ioAuto,
			AutoMinFile: p.size(f.ioAutoMin), AutoMaxFile: p.size(f.ioAutoMax),
			AutoMinRec: int(p.size(f.ioAutoMinRec)), AutoMaxRec: int(p.size(f.ioAutoMaxRec)), Seed: f.seed,
		}
	case "bonnie":
		lo, hi := p.rng(f.bnFileSize)
		w = &workload.Bonnie{FileSize: p.size(f.bnSize), Chunk: int(p.size(f.bnChunk)), Files: f.bnFiles,
			FileMin: lo, FileMax: hi, Dirs: f.bnDirs, Seed: f.seed}
	case "postmark":
		lo, hi := p.rng(f.pmSize)
		w = &workload.PostMark{SizeLow: lo, SizeHigh: hi, Files: f.pmFiles, Transactions: f.pmTx,
			ReadBlock: int(p.size(f.pmReadBlock)), WriteBlock: int(p.size(f.pmWriteBlock)),
			ReadBias: f.pmReadBias, CreateBias: f.pmCreateBias, Subdirs: f.pmSubdirs, Seed: f.seed}
	case "mass":
		lo, hi := p.rng(f.massSize)
		w = &workload.Mass{Files: f.massFiles, SizeLow: lo, SizeHigh: hi, Seed: f.seed}
	case "hugedir":
		w = &workload.HugeDir{Entries: f.hugeEntries}
	}
	if p.err != nil {
		return nil, p.err
	}
	return w, workload.Validate(w, bench.MaxRecord)
}

// sizeParser parses several sizes, keeping the first error.
type sizeParser struct{ err error }

func (p *sizeParser) size(s string) int64 {
	v, err := workload.ParseSize(s)
	if p.err == nil {
		p.err = err
	}
	return v
}

func (p *sizeParser) rng(s string) (int64, int64) {
	lo, hi, err := workload.ParseRange(s)
	if p.err == nil {
		p.err = err
	}
	return lo, hi
}
