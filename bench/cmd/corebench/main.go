// Command corebench is the measuring helper of bench/core.sh, the issue-2
// speed benchmark. Each subcommand runs one timed phase against a directory
// and prints "metric value" lines; `report` turns the collected results into
// the table of medians and ratios. A compiled helper keeps the cost of the
// loop itself (a shell's fork per file) out of the numbers.
//
//	corebench meta DIR N          create, stat and unlink N empty files (seconds)
//	corebench hugedir DIR N       create N files, readdir, stat each (seconds)
//	corebench write FILE MIB [KIND] sequential write in 1 MiB pieces + fsync (MiB/s);
//	                                KIND: pattern (default), random, text
//	corebench read FILE           sequential read in 1 MiB pieces (MiB/s)
//	corebench rss PID             the process's peak RSS, VmHWM (KiB)
//	corebench stall FILE SECONDS  write 4 KiB + stat every ms; longest and p99 wait (ms)
//	corebench fsync FILE N        N times append 4 KiB + fsync; p50 and p99 (ms)
//	corebench fsyncs N FILE...    the same on several files, interleaved round by
//	                                round; p50, p99 and p50 ratio to the first file
//	corebench peers DIR           bench/peers.sh's tables from the results in DIR
//	corebench report RESULTS      median table and verdicts from "target metric value" lines
package main

import (
	"fmt"
	"os"
	"strconv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "corebench:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: corebench meta|hugedir|write|read|rss|stall|fsync|fsyncs|peers|report ARGS (see the source)")
	}
	num := func(i int) int {
		if i >= len(args) {
			return 0
		}
		n, _ := strconv.Atoi(args[i])
		return n
	}
	switch args[0] {
	case "meta":
		return meta(args[1], num(2))
	case "hugedir":
		return hugedir(args[1], num(2))
	case "write":
		kind := ""
		if len(args) > 3 {
			kind = args[3]
		}
		return write(args[1], num(2), kind)
	case "read":
		return read(args[1])
	case "stall":
		return stall(args[1], num(2))
	case "fsync":
		return fsyncLatency(args[1], num(2))
	case "fsyncs":
		return fsyncCompare(num(1), args[2:])
	case "peers":
		return peers(args[1])
	case "rss":
		return rss(num(1))
	case "report":
		return report(args[1])
	}
	return fmt.Errorf("unknown subcommand %q", args[0])
}
