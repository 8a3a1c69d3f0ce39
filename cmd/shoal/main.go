// Command shoal is the Shoal distributed file system's single binary.
package main

import (
	"os"

	"shoal/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args)) }
